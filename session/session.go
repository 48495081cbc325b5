// Package session knows the layout of Claude Cowork's session folders: it discovers them under the
// sessions roots, opens one as a handle confined to that folder, and names coworkbridge's files
// inside it.
//
// A session folder is shared with an agent's VM and is hostile input: anything in it may be a
// symbolic link, a FIFO or a file that changes under us. Every operation on a Session therefore
// refuses links and non-regular files at every step of the path, and runs through an [os.Root]
// opened on the session folder, so that even a link swapped in during a race cannot take an
// operation outside it.
//
// The package does not parse any file's content and keeps no state beyond the open handle.
package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// Names of the files inside a session folder, relative to it, with forward slashes.
const (
	ClaudeDir    = ".claude"
	SettingsFile = ".claude/settings.json"
	BridgeDir    = ".claude/coworkbridge"
	SpoolFile    = ".claude/coworkbridge/events.jsonl"
	DecisionsDir = ".claude/coworkbridge/decisions"
	// StagingDir is where a hook in the VM writes its event line before appending it to the
	// spool in one write. It is not watched: the hook's file coming and going there wakes no one.
	StagingDir = ".claude/coworkbridge/staging"
	AliveFile  = ".claude/coworkbridge/alive"
	// ReceiptsDir, in a host channel, is where the host hook leaves a receipt of each call it
	// judged itself (under lockdown the session's own hook does not run), so that reconciliation
	// counts the call as guarded.
	ReceiptsDir = ".claude/coworkbridge/receipts"
	// HeldDir, in a session, is where the injector keeps aside what it held of the CLI's
	// configuration: inside coworkbridge's folder, which no CLI reads skills, agents or commands from.
	HeldDir = BridgeDir + "/held"
	// QuarantineFile, in a host channel, says until when the session is quarantined: the host
	// hook refuses every call of the session until then.
	QuarantineFile = ".claude/coworkbridge/quarantine"
)

// ChannelDir is a session's host channel: a folder in the daemon's own state, outside every
// session, laid out like the session (its BridgeDir holds the lease, the decisions and the events
// of hooks that run on the Mac). The agent's VM cannot reach it, so nothing there is planted.
func ChannelDir(root, id string) string { return filepath.Join(root, id) }

// DecisionFile names the decision file of one request. The caller validates rid; a rid that is not
// a single plain name is refused by every operation anyway.
func DecisionFile(rid string) string { return DecisionsDir + "/" + rid + ".json" }

// Errors for entries that a session must not contain where coworkbridge looks.
var (
	ErrLink       = errors.New("refusing a symbolic link")
	ErrNotRegular = errors.New("not a regular file")
	ErrNotDir     = errors.New("not a directory")
	ErrChanged    = errors.New("changed while being opened")
	ErrTooLarge   = errors.New("larger than allowed")
	ErrBadName    = errors.New("not a plain relative name")
	// ErrLinked refuses a file with more than one hard link: its content is shared with a name
	// elsewhere, possibly outside the session, whose lines must not be taken for the session's.
	ErrLinked = errors.New("has more than one hard link")
)

// Session is an open session folder. All its methods take names relative to the folder with
// forward slashes, and are safe for concurrent use.
type Session struct {
	dir  string
	id   string
	root *os.Root

	// dirs are the folders inside the session this handle has opened, each found to be a real
	// folder, not a link, when opened. Each use looks again at every step (one lstat through the
	// folder above, kept open) and reopens a folder replaced or removed since: an operation costs
	// a look per step and its own call, instead of opening and closing every folder on the way
	// each time, and it never passes through a link, even one swapped in between the look and
	// the use (the handle stays on the folder it checked). Within a Hold, a folder is looked at
	// only at its first use.
	mu   sync.Mutex
	dirs map[string]openDir
	// own: the folder is the daemon's own (see OpenOwn), and a folder held open is not looked
	// at again.
	own bool
	// holds counts the callers inside Hold; pass numbers the holds, so that a folder looked at
	// in the current one (openDir.pass) is not looked at again before it ends.
	holds int
	pass  uint64
	// retired are folders found replaced: closed with the handle, not at once, since another
	// goroutine may be using one (at most maxRetired are kept).
	retired []*os.Root
}

// ErrNotOurs: the session folder belongs to another user than this process's. coworkbridge works
// in a session only as the session's own user (in system mode, that user's worker), so that what
// it makes there is the user's without a change of owner, and a link or a name swapped in can
// hand nobody a file that was not already theirs.
var ErrNotOurs = errors.New("the folder belongs to another user; coworkbridge works in a session only as its own user")

// ours reports whether fi, a session folder, is this process's user's.
func ours(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}

const maxRetired = 64

// openDir is a folder of the session held open, what it was when opened, and the hold in which
// it was last found to be still there.
type openDir struct {
	root *os.Root
	fi   fs.FileInfo
	pass uint64
}

// Open returns a handle confined to the session folder dir. A dir that is itself a symbolic link,
// or not a directory, is refused.
func Open(dir string) (*Session, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("open session %s: %w", dir, ErrLink)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open session %s: %w", dir, ErrNotDir)
	}
	if !ours(fi) {
		return nil, fmt.Errorf("open session %s: %w", dir, ErrNotOurs)
	}
	root, err := openRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", dir, err)
	}
	// The folder might have been swapped for a link between Lstat and OpenRoot.
	opened, err := root.Stat(".")
	if err != nil || !os.SameFile(fi, opened) {
		root.Close()
		return nil, fmt.Errorf("open session %s: %w", dir, ErrChanged)
	}
	return &Session{dir: dir, id: filepath.Base(dir), root: root}, nil
}

// OpenOwn is Open for a folder of the daemon's own state laid out like a session (a host
// channel), out of every agent's reach: its folders are checked when first opened, as in a
// session, but not looked at again at each use. Whoever keeps the handle checks that it is still
// on the folder at its path.
func OpenOwn(dir string) (*Session, error) {
	s, err := Open(dir)
	if err == nil {
		s.own = true
	}
	return s, err
}

// Close releases the handle.
func (s *Session) Close() error {
	s.mu.Lock()
	for _, d := range s.dirs {
		d.root.Close()
	}
	for _, r := range s.retired {
		r.Close()
	}
	s.dirs, s.retired = nil, nil
	s.mu.Unlock()
	return s.root.Close()
}

// Dir is the session folder's absolute path on the host.
func (s *Session) Dir() string { return s.dir }

// ID is the session folder's name, local_<uuid>.
func (s *Session) ID() string { return s.id }

// Own reports whether the folder is the daemon's own (opened with OpenOwn), not a session's.
func (s *Session) Own() bool { return s.own }

// Root is the confined handle itself, for libraries that take an [os.Root]. Operations through it
// are confined to the session but follow links inside it; prefer the Session's own methods.
func (s *Session) Root() *os.Root { return s.root }

func (s *Session) errorf(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: s.id + "/" + name, Err: err}
}

// checkName accepts only clean, local, slash-separated names.
func checkName(name string) error {
	if name == "" || name == "." || name != path.Clean(name) || !filepath.IsLocal(name) || strings.Contains(name, `\`) {
		return ErrBadName
	}
	return nil
}

// parent is the handle of the folder holding name, checked at every step (see Session.dirs),
// and name's last element.
func (s *Session) parent(name string) (*os.Root, string, error) {
	dir, base := path.Split(name)
	r, err := s.folder(strings.TrimSuffix(dir, "/"))
	return r, base, err
}

// folder is the checked handle of the folder dir ("" for the session itself).
func (s *Session) folder(dir string) (*os.Root, error) {
	if dir == "" {
		return s.root, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.folderLocked(dir)
}

func (s *Session) folderLocked(dir string) (*os.Root, error) {
	if d, ok := s.dirs[dir]; ok && (s.own || s.holds > 0 && d.pass == s.pass) {
		return d.root, nil
	}
	up, base := s.root, dir
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		var err error
		if up, err = s.folderLocked(dir[:i]); err != nil {
			return nil, err
		}
		base = dir[i+1:]
	}
	fi, err := up.Lstat(base)
	switch {
	case err != nil:
		s.forgetLocked(dir)
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		s.forgetLocked(dir)
		return nil, fmt.Errorf("%s: %w", dir, ErrLink)
	case !fi.IsDir():
		s.forgetLocked(dir)
		return nil, fmt.Errorf("%s: %w", dir, ErrNotDir)
	}
	if d, ok := s.dirs[dir]; ok {
		if os.SameFile(fi, d.fi) {
			d.pass = s.pass
			s.dirs[dir] = d
			return d.root, nil
		}
		s.forgetLocked(dir) // replaced since it was opened
	}
	r, err := openRootIn(up, base)
	if err != nil {
		return nil, err
	}
	// A link swapped in between the look and the open would have been followed: refuse it.
	if opened, err := r.Stat("."); err != nil || !os.SameFile(fi, opened) {
		r.Close()
		return nil, fmt.Errorf("%s: %w", dir, ErrChanged)
	}
	if s.dirs == nil {
		s.dirs = map[string]openDir{}
	}
	s.dirs[dir] = openDir{r, fi, s.pass}
	return r, nil
}

// Hold makes the handle look at each folder of the session once, at its first use, and use it
// without looking again until release is called: one pass over a session's files costs a look
// per folder, not one per folder per operation. Holds may nest and overlap; the looks resume
// when the last is released.
//
// It weakens nothing that keeps the host safe: every operation still runs through a handle on
// a folder checked not to be a link, and never through a path. What a hold gives up is
// noticing, within it, that the agent replaced a folder by another: operations until the
// release use the one that was there.
func (s *Session) Hold() (release func()) {
	s.mu.Lock()
	if s.holds == 0 {
		s.pass++
	}
	s.holds++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.holds--
			s.mu.Unlock()
		})
	}
}

// forgetLocked lets go of the folder dir if it is held open.
func (s *Session) forgetLocked(dir string) {
	d, ok := s.dirs[dir]
	if !ok {
		return
	}
	delete(s.dirs, dir)
	if len(s.retired) < maxRetired {
		s.retired = append(s.retired, d.root)
	} else {
		d.root.Close()
	}
}

// Lstat describes name without following a final link.
func (s *Session) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, s.errorf("lstat", name, err)
	}
	dir, base, err := s.parent(name)
	if err != nil {
		return nil, s.errorf("lstat", name, err)
	}
	fi, err := dir.Lstat(base)
	if err != nil {
		return nil, s.errorf("lstat", name, err)
	}
	return fi, nil
}

// OpenFile opens a regular file. It refuses links and anything but a regular file, never blocks
// on a FIFO, and with O_CREATE creates the file only where nothing at all stands.
func (s *Session) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, s.errorf("open", name, err)
	}
	dir, base, err := s.parent(name)
	if err != nil {
		return nil, s.errorf("open", name, err)
	}
	fi, err := dir.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0 {
		// O_EXCL makes os.Root refuse a link planted since the Lstat instead of following it.
		f, err := dir.OpenFile(base, flag|os.O_EXCL|syscall.O_NONBLOCK, perm)
		if err != nil {
			return nil, s.errorf("create", name, err)
		}
		return f, nil
	}
	if err != nil {
		return nil, s.errorf("open", name, err)
	}
	if err := regular(fi); err != nil {
		return nil, s.errorf("open", name, err)
	}
	if flag&os.O_EXCL != 0 {
		return nil, s.errorf("create", name, fs.ErrExist)
	}
	f, err := dir.OpenFile(base, flag&^os.O_CREATE|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, s.errorf("open", name, err)
	}
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) || !opened.Mode().IsRegular() {
		f.Close()
		return nil, s.errorf("open", name, ErrChanged)
	}
	return f, nil
}

// OpenSole is OpenFile for a file whose content must be the session's own (a spool, the lease, a
// transcript): one that has more than one hard link is refused with ErrLinked, whichever of the
// names was made first.
func (s *Session) OpenSole(name string, flag int) (*os.File, error) {
	f, err := s.OpenFile(name, flag, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && Links(fi) > 1 {
		err = ErrLinked
	}
	if err != nil {
		f.Close()
		return nil, s.errorf("open", name, err)
	}
	return f, nil
}

// Links is a file's count of hard links (0 where the platform does not say).
func Links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

func regular(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return ErrLink
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w (%v)", ErrNotRegular, fi.Mode().Type())
	}
	return nil
}

// ReadFile reads a regular file of at most max bytes; a larger one is refused with ErrTooLarge
// rather than read in part.
func (s *Session) ReadFile(name string, max int64) ([]byte, error) {
	f, err := s.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	return s.readAll(f, name, max)
}

// ReadSole is ReadFile for a file that must have a single link (see OpenSole).
func (s *Session) ReadSole(name string, max int64) ([]byte, error) {
	f, err := s.OpenSole(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	return s.readAll(f, name, max)
}

// ReadSoleStamped is ReadSole, and the stamp of the file read, looked at through the handle
// that read it: a file found later with that stamp is the one read, unchanged.
func (s *Session) ReadSoleStamped(name string, max int64) ([]byte, Stamp, error) {
	f, err := s.OpenSole(name, os.O_RDONLY)
	if err != nil {
		return nil, Stamp{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Stamp{}, s.errorf("stat", name, err)
	}
	data, err := s.readAll(f, name, max)
	if err != nil {
		return nil, Stamp{}, err
	}
	return data, StampOf(fi), nil
}

func (s *Session) readAll(f *os.File, name string, max int64) ([]byte, error) {
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, s.errorf("read", name, err)
	}
	if int64(len(data)) > max {
		return nil, s.errorf("read", name, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max))
	}
	return data, nil
}

// MkdirAll creates the folder name and any missing parents. An existing entry on the way that is a
// link or not a directory is an error; nothing is created past it.
func (s *Session) MkdirAll(name string, perm fs.FileMode) error {
	if err := checkName(name); err != nil {
		return s.errorf("mkdir", name, err)
	}
	// Nearly always the folder is there: one walk of the folders held, not a mkdir at each step.
	if _, err := s.folder(name); err == nil {
		return nil
	}
	parts := strings.Split(name, "/")
	for i := 1; i <= len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		up, err := s.folder(strings.Join(parts[:i-1], "/"))
		if err != nil {
			return s.errorf("mkdir", dir, err)
		}
		err = up.Mkdir(parts[i-1], perm)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return s.errorf("mkdir", dir, err)
		}
		fi, err := up.Lstat(parts[i-1])
		if err != nil {
			return s.errorf("mkdir", dir, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return s.errorf("mkdir", dir, ErrLink)
		}
		if !fi.IsDir() {
			return s.errorf("mkdir", dir, ErrNotDir)
		}
	}
	return nil
}

// checkReplaceable verifies that name may be replaced: a plain name under real folders, and
// either absent or a regular file.
func (s *Session) checkReplaceable(op, name string) error {
	if err := checkName(name); err != nil {
		return s.errorf(op, name, err)
	}
	dir, base, err := s.parent(name)
	if err != nil {
		return s.errorf(op, name, err)
	}
	fi, err := dir.Lstat(base)
	if err == nil {
		err = regular(fi)
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return s.errorf(op, name, err)
	}
	return nil
}

// WriteFile replaces name atomically (temporary file in the same folder, fsync, rename) with data.
// An existing entry that is not a regular file is left alone and reported.
func (s *Session) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := s.checkReplaceable("write", name); err != nil {
		return err
	}
	// The temporary file sits beside the target, so that the rename stays in one folder.
	parent, base, err := s.parent(name)
	if err != nil {
		return s.errorf("write", name, err)
	}
	if err := s.writeAtomically(parent, base, data, perm); err != nil {
		return s.errorf("write", name, err)
	}
	return nil
}

// writeAtomically is renameio.WriteFile inside dir.
func (s *Session) writeAtomically(dir *os.Root, base string, data []byte, perm fs.FileMode) error {
	t, err := renameio.NewPendingFile(base, renameio.WithRoot(dir), renameio.WithStaticPermissions(perm))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}

// TempPrefix starts the name of every temporary file Publish creates, so that a sweeper can
// recognise the ones a crash left behind.
const TempPrefix = ".cb-tmp-"

// Publish replaces name atomically (temporary file beside it, then rename) but, unlike WriteFile,
// without fsync. It is for files that matter for seconds only, such as decisions: a reader sees
// the old content or the new, never a part, and a crash at worst loses a file nobody will need.
// On macOS an fsync is a full flush of the drive's cache and would cost more than the whole
// round trip it sits in.
//
// Empty content where nothing stands yet (most decisions: no objection) is created at its name
// at once: there is no part of nothing to be seen, and the rename would double the cost.
func (s *Session) Publish(name string, data []byte, perm fs.FileMode) error {
	return s.publish(name, data, perm, time.Time{})
}

// PublishDated is Publish with the file's modification time set to mod before it takes the name:
// for the alive lease, which hooks compare by date with a file of their own.
func (s *Session) PublishDated(name string, data []byte, perm fs.FileMode, mod time.Time) error {
	return s.publish(name, data, perm, mod)
}

func (s *Session) publish(name string, data []byte, perm fs.FileMode, mod time.Time) error {
	if len(data) == 0 && mod.IsZero() && checkName(name) == nil && s.createEmpty(name, perm) {
		return nil // nothing stood at the name, so there was nothing to check
	}
	if err := s.checkReplaceable("publish", name); err != nil {
		return err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand never fails on supported platforms
	dir, base, err := s.parent(name)
	if err != nil {
		return s.errorf("publish", name, err)
	}
	tmp := TempPrefix + base + "-" + hex.EncodeToString(rnd[:])
	// O_EXCL: a link planted at the temporary name is refused, never followed.
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, perm)
	if err != nil {
		return s.errorf("publish", name, err)
	}
	if len(data) > 0 {
		_, err = f.Write(data)
	}
	if err == nil && !mod.IsZero() {
		err = Date(f, mod)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// rename(2) replaces a link planted at name since the check, and never follows it.
		err = dir.Rename(tmp, base)
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return s.errorf("publish", name, err)
	}
	return nil
}

// Date sets the open file's modification (and access) time to mod, through the descriptor: no
// name is looked up again, so nothing swapped in meanwhile can be dated instead.
func Date(f *os.File, mod time.Time) error {
	tv := []syscall.Timeval{syscall.NsecToTimeval(mod.UnixNano()), syscall.NsecToTimeval(mod.UnixNano())}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = syscall.Futimes(int(fd), tv) }); err != nil {
		return err
	}
	if ferr != nil {
		return fmt.Errorf("date %s: %w", f.Name(), ferr)
	}
	return nil
}

// createEmpty makes an empty file at name where nothing stands; false when it did not (something
// stands there, or planted since the check: Publish then replaces it as it would any content).
func (s *Session) createEmpty(name string, perm fs.FileMode) bool {
	dir, base, err := s.parent(name)
	if err != nil {
		return false
	}
	// O_EXCL: nothing at the name is followed or truncated, a link included.
	f, err := dir.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NONBLOCK, perm)
	if err != nil {
		return false
	}
	return f.Close() == nil
}

// ReadDir lists the folder name, at most max entries, without following links: each entry's
// type is the entry's own. A longer listing is cut and reported with ErrTooLarge alongside the
// entries read.
func (s *Session) ReadDir(name string, max int) ([]fs.DirEntry, error) {
	return list(s, name, max, (*os.File).ReadDir)
}

// ReadDirNames lists the names in the folder name, at most max, like ReadDir but without
// looking at the entries: a listing through a confined handle otherwise looks at each one.
func (s *Session) ReadDirNames(name string, max int) ([]string, error) {
	return list(s, name, max, (*os.File).Readdirnames)
}

// list reads at most max entries of the folder name with read.
func list[T any](s *Session, name string, max int, read func(*os.File, int) ([]T, error)) ([]T, error) {
	if err := checkName(name); err != nil {
		return nil, s.errorf("readdir", name, err)
	}
	dir, err := s.folder(name)
	if err != nil {
		return nil, s.errorf("readdir", name, err)
	}
	f, err := dir.OpenFile(".", os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, s.errorf("readdir", name, err)
	}
	defer f.Close()
	entries, err := read(f, max)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return entries, s.errorf("readdir", name, err)
	}
	if len(entries) == max {
		if more, _ := read(f, 1); len(more) > 0 {
			return entries, s.errorf("readdir", name, fmt.Errorf("%w: more than %d entries", ErrTooLarge, max))
		}
	}
	return entries, nil
}

// Rename moves the regular file oldname to newname, which must not exist. It is for keeping a copy
// of a damaged file aside, so it never replaces anything.
func (s *Session) Rename(oldname, newname string) error {
	var dirs [2]*os.Root
	var bases [2]string
	for i, n := range []string{oldname, newname} {
		if err := checkName(n); err != nil {
			return s.errorf("rename", n, err)
		}
		var err error
		if dirs[i], bases[i], err = s.parent(n); err != nil {
			return s.errorf("rename", n, err)
		}
	}
	fi, err := dirs[0].Lstat(bases[0])
	if err == nil {
		err = regular(fi)
	}
	if err != nil {
		return s.errorf("rename", oldname, err)
	}
	if _, err := dirs[1].Lstat(bases[1]); !errors.Is(err, fs.ErrNotExist) {
		return s.errorf("rename", newname, fs.ErrExist)
	}
	// os.Root renames within one root: that of the deepest folder holding both names, checked
	// like the parents, so that only the last steps are looked up again.
	common := commonDir(oldname, newname)
	r, err := s.folder(common)
	if err != nil {
		return s.errorf("rename", oldname, err)
	}
	if common != "" {
		oldname, newname = oldname[len(common)+1:], newname[len(common)+1:]
	}
	if err := r.Rename(oldname, newname); err != nil {
		return s.errorf("rename", oldname, err)
	}
	return nil
}

// commonDir is the deepest folder holding both names, "" for the session itself.
func commonDir(a, b string) string {
	da, db := path.Dir(a), path.Dir(b)
	for da != db {
		switch {
		case len(da) > len(db):
			da = path.Dir(da)
		case len(db) > len(da):
			db = path.Dir(db)
		default:
			da, db = path.Dir(da), path.Dir(db)
		}
	}
	if da == "." {
		return ""
	}
	return da
}

// MoveAside renames a regular file or a folder (never a link, FIFO or device) to newname, which
// must not exist: for moving an entry that stands where one of ours must be, with its content kept.
func (s *Session) MoveAside(oldname, newname string) error {
	fi, err := s.Lstat(oldname)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return s.errorf("rename", oldname, fmt.Errorf("%w (%v)", ErrNotRegular, fi.Mode().Type()))
	}
	if err := checkName(newname); err != nil {
		return s.errorf("rename", newname, err)
	}
	if _, err := s.root.Lstat(newname); !errors.Is(err, fs.ErrNotExist) {
		return s.errorf("rename", newname, fs.ErrExist)
	}
	if err := s.root.Rename(oldname, newname); err != nil {
		return s.errorf("rename", oldname, err)
	}
	return nil
}

// Remove deletes a file or an empty folder. A link is removed itself, never its target.
func (s *Session) Remove(name string) error {
	if err := checkName(name); err != nil {
		return s.errorf("remove", name, err)
	}
	dir, base, err := s.parent(name)
	if err != nil {
		return s.errorf("remove", name, err)
	}
	if err := dir.Remove(base); err != nil {
		return s.errorf("remove", name, err)
	}
	return nil
}

// openRoot opens the folder at path as a Root, and nothing but a folder: os.OpenRoot opens its
// last name without O_DIRECTORY, so a FIFO swapped in after a look would block the open until a
// writer came (one user's FIFO stalling a daemon that serves every user). "path/." can only be
// resolved through a folder: anything else fails at once.
func openRoot(path string) (*os.Root, error) {
	return os.OpenRoot(path + string(filepath.Separator) + ".")
}

// openRootIn is openRoot for the folder name inside r.
func openRootIn(r *os.Root, name string) (*os.Root, error) {
	return r.OpenRoot(name + string(filepath.Separator) + ".")
}
