package transcript

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
)

// Projects is where the CLI keeps a session's transcripts, relative to the session folder: one
// folder per project, holding <session-id>.jsonl and, for subagents,
// <session-id>/subagents/.../agent-<id>.jsonl.
const Projects = ".claude/projects"

// Dir is the session folder a Follower reads; *session.Session implements it. OpenSole must
// refuse links, anything but a regular file, and files with more than one hard link.
type Dir interface {
	ReadDir(name string, max int) ([]fs.DirEntry, error)
	OpenSole(name string, flag int) (*os.File, error)
}

// Positions keeps where each transcript was read up to, by name, across restarts.
type Positions interface {
	Get(name string) (spool.Position, bool)
	Set(name string, p spool.Position)
	Forget(name string)
	Names() []string
}

// Tamper is a change to a transcript the CLI never makes: it only ever creates one and appends
// to it.
type Tamper struct {
	File, What string
}

// Limits of what one session's transcripts may make a Follower hold.
const (
	// MaxFiles bounds the transcripts followed: a real session has one per conversation and one
	// per subagent. Past it the session is over budget (reported), not quietly half-followed.
	MaxFiles = 1000
	// maxDepth bounds how deep below Projects transcripts are looked for.
	maxDepth = 6
	// tailWindow is how much of a transcript before the read position is fingerprinted: an edit
	// there (a result turned into an error, a call cut out) after it was read is a rewrite.
	tailWindow = 64 << 10
)

// Follower tails every transcript of one session like a spool: with a persisted position and
// file identity per file, from the moment the file appears. It belongs to one goroutine.
type Follower struct {
	pos     Positions
	maxLine int64
	// files are the transcripts seen, by name; mod and size are what the last look found.
	files map[string]*followed
	// first: no look has been made yet. Files found then with no persisted position, and last
	// written before since, were written before anyone followed the session, and are read from
	// their end.
	first bool
	since time.Time
	// passBytes is MaxPassBytes (smaller in tests).
	passBytes int64
	// moved are transcripts renamed to names no transcript has, followed there by identity.
	moved map[string]bool
}

type followed struct {
	partial spool.Partial
	// mod and changed are the modification and change times the last look found, size the
	// size: a file whose change time and size have not moved is not read again (only the
	// kernel sets the change time, so no edit can hide behind an old one).
	mod, changed time.Time
	size         int64
	gone         bool // reported gone; a file back at the name is a replacement
}

// Footprint is what the follower keeps in memory, in bytes: its files' names and positions.
func (f *Follower) Footprint() int64 {
	n := int64(0)
	for name := range f.files {
		n += int64(len(name)) + 160 // the name twice (here and in the store), times and a position
	}
	return n
}

// NewFollower follows the transcripts whose positions pos keeps, starting to follow the session
// at since; lines longer than maxLine are skipped.
func NewFollower(pos Positions, maxLine int64, since time.Time) *Follower {
	return &Follower{pos: pos, maxLine: maxLine, files: map[string]*followed{}, first: true, since: since, passBytes: MaxPassBytes}
}

// Report is what one look found besides the lines.
type Report struct {
	Tampers []Tamper
	// Dirs are the folders that hold transcripts (Projects and below), to be watched.
	Dirs []string
	// Over: more transcripts than MaxFiles; the ones past it are not followed.
	Over bool
	// Files is how many transcripts are followed.
	Files int
	// Read is how many bytes this look read; More, that it stopped at MaxPassBytes with more
	// to read: look again soon.
	Read int64
	More bool
}

// MaxPassBytes bounds what one look reads, so that a session's huge transcript is read in
// steps whose positions are kept: a daemon restarted meanwhile resumes, never starts over, and
// the session's worker is not held for the whole file.
const MaxPassBytes = 64 << 20

// Follow reads what each transcript added since the last look and hands every complete line to
// each, file by file in name order.
func (f *Follower) Follow(d Dir, each func(name string, line []byte)) Report {
	names, dirs, others, over := list(d)
	for name := range f.moved { // renamed away from .jsonl: followed under the name it has now
		if slices.Contains(others, name) {
			names = append(names, name)
		} else {
			delete(f.moved, name)
		}
	}
	slices.Sort(names)
	rep := Report{Dirs: dirs, Over: over, Files: len(names)}
	known := f.pos.Names()
	fresh := f.first && len(known) == 0
	f.first = false
	left := f.passBytes
	for _, name := range names {
		if left <= 0 {
			rep.More = true
			break
		}
		if _, ok := f.pos.Get(name); !ok {
			if from := f.renamed(d, name, known, names); from != "" {
				// What it holds past the position moved with it is the CLI's too: read on, so
				// that a call written just before the rename is not hidden by it.
				rep.Tampers = append(rep.Tampers, Tamper{name, "the transcript was renamed from " + from + " (the CLI never renames one)"})
			}
		}
		t, n := f.read(d, name, fresh, left, each)
		if t != "" {
			rep.Tampers = append(rep.Tampers, Tamper{name, t})
		}
		left -= n
		rep.Read += n
	}
	rep.More = rep.More || left <= 0
	for _, name := range f.pos.Names() {
		if !slices.Contains(names, name) && !over {
			if to := f.movedAway(d, name, others); to != "" {
				// Read on where it went: a call written before the rename must not hide by it.
				rep.Tampers = append(rep.Tampers, Tamper{name, "the transcript was renamed to " + to + " (the CLI never renames one); it is followed there"})
				t, n := f.read(d, to, false, max(left, 1), each)
				if t != "" {
					rep.Tampers = append(rep.Tampers, Tamper{to, t})
				}
				rep.Read += n
				continue
			}
			if st := f.files[name]; st == nil || !st.gone {
				rep.Tampers = append(rep.Tampers, Tamper{name, "the transcript was removed or renamed"})
				f.files[name] = &followed{gone: true}
			}
			f.pos.Forget(name)
		}
	}
	return rep
}

// movedAway finds the file a followed transcript became under a name no transcript has (x.jsonl
// renamed to x.jsonl.old), by its identity: its position moves with it, and it is followed
// there from now on.
func (f *Follower) movedAway(d Dir, name string, others []string) string {
	pos, ok := f.pos.Get(name)
	if !ok {
		return ""
	}
	for _, other := range others {
		if _, known := f.pos.Get(other); known {
			continue
		}
		fh, err := d.OpenSole(other, os.O_RDONLY)
		if err != nil {
			continue
		}
		fi, err := fh.Stat()
		fh.Close()
		if err != nil {
			continue
		}
		if id, err := spool.IdentityOf(fi); err == nil && id == pos.ID {
			f.pos.Forget(name)
			f.pos.Set(other, pos)
			f.files[other], f.files[name] = f.files[name], &followed{gone: true}
			if f.moved == nil {
				f.moved = map[string]bool{}
			}
			f.moved[other] = true
			return other
		}
	}
	return ""
}

// renamed finds the known transcript that a new name is: the same file under a name it no
// longer has. Its position moves with it, so that what was read is not read again.
func (f *Follower) renamed(d Dir, name string, known, names []string) string {
	fh, err := d.OpenSole(name, os.O_RDONLY)
	if err != nil {
		return ""
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return ""
	}
	id, err := spool.IdentityOf(fi)
	if err != nil {
		return ""
	}
	for _, old := range known {
		pos, _ := f.pos.Get(old)
		if pos.ID != id || slices.Contains(names, old) {
			continue
		}
		f.pos.Forget(old)
		f.pos.Set(name, pos)
		f.files[name], f.files[old] = f.files[old], &followed{gone: true}
		return old
	}
	return ""
}

// read reads one transcript's new lines, up to about limit bytes; it returns what was done to the
// file, "" when nothing the CLI would not do, and how many bytes it read.
func (f *Follower) read(d Dir, name string, fresh bool, limit int64, each func(string, []byte)) (string, int64) {
	fh, err := d.OpenSole(name, os.O_RDONLY)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0
		}
		return "the transcript was replaced by something the CLI does not write (" + err.Error() + ")", 0
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return "", 0
	}
	st := f.files[name]
	if st == nil {
		st = &followed{}
		f.files[name] = st
	}
	pos, known := f.pos.Get(name)
	var what string
	switch {
	case !known && st.gone:
		what = "another file was put at the transcript's name"
	case !known && Check(name) != "":
		what = "a file was planted among the transcripts: " + Check(name)
	case !known && fresh && fi.ModTime().Before(f.since):
		// Written before the session was followed: its calls are not ours to judge now.
		id, _ := spool.IdentityOf(fi)
		pos = spool.Position{ID: id, Offset: fi.Size()}
		pos.Tail = tail(fh, pos.Offset)
	case known && fi.ModTime().Before(st.mod):
		what = "the transcript's modification time was set back"
	case known && fi.Size() == st.size && session.ChangeTime(fi).Equal(st.changed) && !st.changed.IsZero() && st.size == pos.Offset:
		return "", 0 // unchanged since the last look
	}
	st.gone = false
	rd, reset, err := spool.NewReader(fh, pos, f.maxLine)
	if err != nil {
		return "", 0
	}
	switch {
	case reset != spool.NoReset:
		what = "the transcript was " + string(reset) + " (the CLI only appends)"
	case known && pos.Tail != 0 && tail(fh, pos.Offset) != pos.Tail:
		what = "the transcript was rewritten in place before its end (the CLI only appends)"
	}
	if what != "" {
		// What it holds now is not the record: skip to its end, so that a planted history is
		// neither judged nor taken for proof, and report the tampering.
		id, _ := spool.IdentityOf(fi)
		f.set(name, st, fh, fi, spool.Position{ID: id, Offset: fi.Size()}, spool.Partial{})
		return what, 0
	}
	rd.Resume(st.partial)
	start, end := pos.Offset, pos.Offset
	for end-start < limit {
		l, err := rd.Next()
		if err != nil {
			break // io.EOF, or a read error: the next look tries again
		}
		end = l.End
		if !l.Oversized {
			each(name, l.Data)
		}
	}
	f.set(name, st, fh, fi, rd.Position(), rd.Partial())
	return "", end - start
}

// set records where a transcript was read to.
func (f *Follower) set(name string, st *followed, fh *os.File, fi fs.FileInfo, pos spool.Position, partial spool.Partial) {
	pos.Tail = tail(fh, pos.Offset)
	f.pos.Set(name, pos)
	st.partial, st.mod = partial, fi.ModTime()
	st.size, st.changed = -1, time.Time{} // more may have come while reading: look again
	if now, err := fh.Stat(); err == nil && now.Size() == pos.Offset && session.ChangeTime(now).Equal(session.ChangeTime(fi)) {
		st.size, st.changed = now.Size(), session.ChangeTime(now)
	}
}

// tail fingerprints the tailWindow bytes before off (SHA-256, so that no edit can be made to
// keep it); 0 when they cannot be read.
func tail(r io.ReaderAt, off int64) uint64 {
	n := min(off, tailWindow)
	if n <= 0 {
		return 0
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, off-n); err != nil {
		return 0
	}
	sum := sha256.Sum256(buf)
	return binary.BigEndian.Uint64(sum[:8]) | 1
}

// list finds the session's transcripts: every .jsonl file below Projects, to maxDepth, in name
// order, the folders that hold them, and the other regular files there (a transcript renamed
// away is one of them). Links are never followed (ReadDir reports them as
// such, and they are skipped).
func list(d Dir) (names, dirs, others []string, over bool) {
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := d.ReadDir(dir, MaxFiles+1)
		if err != nil && len(entries) == 0 {
			return
		}
		dirs = append(dirs, dir)
		for _, e := range entries {
			name := dir + "/" + e.Name()
			switch {
			case e.IsDir() && depth < maxDepth && e.Type()&fs.ModeSymlink == 0:
				walk(name, depth+1)
			case strings.HasSuffix(e.Name(), ".jsonl") && e.Type()&^fs.ModePerm == 0:
				if len(names) >= MaxFiles {
					over = true
					continue
				}
				names = append(names, name)
			case e.Type()&^fs.ModePerm == 0 && len(others) < MaxFiles:
				others = append(others, name) // a file a transcript may have been renamed to
			}
		}
	}
	walk(Projects, 0)
	slices.Sort(names)
	return names, dirs, others, over
}

// Check reports a transcript name that no CLI writes, "" for one it does: <slug>/<id>.jsonl or
// <slug>/<id>/subagents/.../agent-<id>.jsonl.
func Check(name string) string {
	rel, ok := strings.CutPrefix(name, Projects+"/")
	parts := strings.Split(rel, "/")
	switch {
	case !ok || len(parts) < 2:
		return fmt.Sprintf("%s is not where the CLI keeps transcripts", name)
	case len(parts) == 2:
		return ""
	case len(parts) >= 4 && parts[2] == "subagents" && strings.HasPrefix(parts[len(parts)-1], "agent-"):
		return ""
	}
	return fmt.Sprintf("%s is not a transcript the CLI writes", name)
}
