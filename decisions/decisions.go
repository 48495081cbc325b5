// Package decisions writes the daemon's half of the enforce handshake inside one session: the
// decision file a waiting hook polls for, the alive lease that tells hooks the daemon is there,
// and the sweeping of files that hooks gave up on or left behind.
//
// Every write goes through the session's confined handle and is atomic (temporary file, rename)
// but not durable: a decision matters for seconds, and an fsync would cost more than the whole
// round trip. The package decides nothing (see classifier) and reads no spool (see collector).
package decisions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/session"
)

// ErrBadRID: a request id that is not exactly 32 lower-case hex digits is never used in a name.
var ErrBadRID = errors.New("request id is not 32 lower-case hex digits")

// Write publishes the decision for one request: an empty file for no objection, else the hook
// output for a deny or an ask, which the hook prints as it is.
func Write(s *session.Session, rid string, d claudehook.Decision, reason, context string) error {
	if !claudehook.ValidRID(rid) {
		return fmt.Errorf("write decision %q: %w", rid, ErrBadRID)
	}
	if err := s.Publish(session.DecisionFile(rid), claudehook.Output(d, reason, context), 0o600); err != nil {
		return fmt.Errorf("write decision: %w", err)
	}
	return nil
}

// WriteStaged is Write for a request whose hook in the VM staged its event in the session's
// staging folder; line is that event as read from the spool. No objection, an empty decision, is
// published by emptying the hook's staged copy and moving it to the decision's name, so that no
// file is made: making one is the costliest step of an answer on some file systems (ext4 without
// a journal looks at every inode freed in the last seconds), and the hook removes one file fewer.
//
// Only a copy that is provably the hook's own is adopted: a plain file with one link, holding
// exactly the line judged. Its content is then worth nothing more (the spool has the line), and
// the hook's one-write append, the only reader, sees an empty file as its end. Anything else
// (a deny, the copy missing, changed, linked, or a file planted at the decision's name) is
// written as Write would, so the answer never depends on the copy. An error wrapping ErrSwapped
// means the answer was written over a file swapped in for the copy before the rename.
func WriteStaged(s *session.Session, rid string, d claudehook.Decision, reason, context string, line []byte) error {
	if len(claudehook.Output(d, reason, context)) > 0 || line == nil {
		return Write(s, rid, d, reason, context)
	}
	adopted, err := Adopt(s, StagedFile(rid), rid, line)
	if adopted {
		return nil
	}
	if werr := Write(s, rid, d, reason, context); werr != nil {
		return werr
	}
	return err
}

// ErrSwapped: the file renamed to the decision's name was not the copy emptied, but one put in
// its place meanwhile. It is a plant, and must be written over.
var ErrSwapped = errors.New("the hook's copy was swapped for another file before it became the answer")

// StagedFile names the hook's staged copy of its event in a session.
func StagedFile(rid string) string { return session.StagingDir + "/" + EventName(rid) }

// Adopt publishes no objection for rid by emptying the file name, a hook's copy of the event it
// handed over (line, as judged), and renaming it to rid's decision file. The copy is adopted only
// if it is a plain file with one link holding exactly line as a hook writes it (see holdsLine);
// the caller must need its content no more. When Adopt reports false, the caller writes the
// decision, which replaces whatever the rename may have put there (ErrSwapped says it did).
func Adopt(s *session.Session, name, rid string, line []byte) (bool, error) {
	if !claudehook.ValidRID(rid) {
		return false, nil
	}
	f, ok := empty(s, name, line)
	if !ok {
		return false, nil
	}
	// Held open until the check after the rename: a file removed meanwhile keeps its inode, which
	// no file swapped in can then be given.
	defer f.Close()
	was, err := f.Stat()
	if err != nil {
		return false, nil
	}
	return publishEmptied(s, name, rid, f, was)
}

// AdoptRead is Adopt for a caller that judged what it read from f, the file at name opened
// read-write, with one link: what was judged is what f holds, so it is emptied without being
// read again. The caller closes f, after AdoptRead returns.
func AdoptRead(s *session.Session, name, rid string, f *os.File) (bool, error) {
	if !claudehook.ValidRID(rid) {
		return false, nil
	}
	// A name given to it since it was read would keep what is emptied now.
	was, err := f.Stat()
	if err != nil || session.Links(was) != 1 || f.Truncate(0) != nil {
		return false, nil
	}
	return publishEmptied(s, name, rid, f, was)
}

// empty empties the file name if it is a hook's copy of line, and returns it open.
func empty(s *session.Session, name string, line []byte) (*os.File, bool) {
	f, err := s.OpenSole(name, os.O_RDWR)
	if err != nil {
		return nil, false
	}
	if !holdsLine(f, line) || f.Truncate(0) != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// publishEmptied renames name, where the file emptied was, to rid's decision file; was is the
// emptied file's identity, taken from its handle.
func publishEmptied(s *session.Session, name, rid string, emptied *os.File, was fs.FileInfo) (bool, error) {
	// Rename never replaces: a file at the decision's name is a plant the watcher reported, and
	// Write replaces it with the answer, as it would have without the copy.
	decision := session.DecisionFile(rid)
	if s.Rename(name, decision) != nil {
		return false, nil
	}
	return published(s, name, decision, emptied, was)
}

// published checks, after the rename of name to decision, that what was published is the file
// emptied. A name is renamed, not the file open: whatever stood there by then is published. Only
// the file emptied may stay; a hook that read another one meanwhile read a plant, reported here.
func published(s *session.Session, name, decision string, emptied *os.File, was fs.FileInfo) (bool, error) {
	fi, err := s.Lstat(decision)
	switch {
	case err == nil && os.SameFile(fi, was):
		return true, nil
	case errors.Is(err, fs.ErrNotExist) && taken(emptied):
		// The hook read its answer and removed it already, between the rename and this look.
		return true, nil
	}
	return false, fmt.Errorf("adopt %s: %w", name, ErrSwapped)
}

// taken reports whether the emptied file, gone from the decision's name, is gone from every
// name: the hook removed it after reading it. One still linked elsewhere was moved away before
// the rename, which then published something else.
func taken(emptied *os.File) bool {
	fi, err := emptied.Stat()
	return err == nil && session.Links(fi) == 0
}

// holdsLine reports whether f holds the line as a hook writes it: the line and its newline, after
// the newline the shell hooks start with (which spool readers skip as an empty line).
func holdsLine(f *os.File, line []byte) bool {
	buf := make([]byte, len(line)+3)
	n, err := f.ReadAt(buf, 0)
	if err != io.EOF || n < len(line)+1 {
		return false
	}
	got := buf[:n]
	if n == len(line)+2 && got[0] == '\n' {
		got = got[1:]
	}
	return len(got) == len(line)+1 && got[len(line)] == '\n' && bytes.Equal(got[:len(line)], line)
}

// WriteAlive vouches that the daemon answers hooks in this session until the given time. The
// time is written in the file and is also its modification time: a hook tells whether the lease
// still runs by testing it newer than the event file it just wrote, without starting a program
// to read the clock.
//
// A renewal rewrites the lease in place when it can: a temporary file and a rename would add an
// entry to our folder, and one added while Cowork deletes the session makes the deletion fail
// ("directory not empty") and leaves a ghost session. In place means: the same length (a Unix
// time, so always until 2286), a plain file with one link (a hard link planted there would carry
// the write to a file outside the session). Anything else is replaced whole.
//
// It returns the lease's stamp as written, looked at through the handle that wrote it (the zero
// Stamp when it cannot be told): a lease found later with that stamp is this one, unchanged.
func WriteAlive(s *session.Session, until time.Time) (session.Stamp, error) {
	data := []byte(strconv.FormatInt(until.Unix(), 10) + "\n")
	if st, ok := renewInPlace(s, data, until); ok {
		return st, nil
	}
	if err := s.PublishDated(session.AliveFile, data, 0o600, until); err != nil {
		return session.Stamp{}, fmt.Errorf("write alive lease: %w", err)
	}
	return session.Stamp{}, nil
}

func renewInPlace(s *session.Session, data []byte, until time.Time) (session.Stamp, bool) {
	f, err := s.OpenFile(session.AliveFile, os.O_WRONLY, 0)
	if err != nil {
		return session.Stamp{}, false
	}
	fi, err := f.Stat()
	ok := err == nil && fi.Size() == int64(len(data)) && session.Links(fi) == 1
	if ok {
		_, err = f.WriteAt(data, 0)
		ok = err == nil && session.Date(f, until) == nil
	}
	var st session.Stamp
	if ok {
		if fi, err := f.Stat(); err == nil {
			st = session.StampOf(fi)
		}
	}
	return st, f.Close() == nil && ok
}

// RemoveAlive withdraws the lease, so that enforce hooks deny at once instead of waiting out their
// timeout. Whatever stands at the name goes, a link included (removing a link never touches its
// target): a planted lease must not outlive the daemon.
func RemoveAlive(s *session.Session) error {
	if err := s.Remove(session.AliveFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove alive lease: %w", err)
	}
	return nil
}

// ReadAlive returns the time the lease runs to; for status and tests.
func ReadAlive(s *session.Session) (time.Time, error) {
	until, _, err := ReadAliveStamped(s)
	return until, err
}

// ReadAliveStamped is ReadAlive, and the stamp of the file read, looked at through the handle
// that read it.
func ReadAliveStamped(s *session.Session) (time.Time, session.Stamp, error) {
	data, st, err := s.ReadSoleStamped(session.AliveFile, 64)
	if err != nil {
		return time.Time{}, session.Stamp{}, fmt.Errorf("read alive lease: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return time.Time{}, session.Stamp{}, fmt.Errorf("read alive lease: %w", err)
	}
	return time.Unix(n, 0), st, nil
}
