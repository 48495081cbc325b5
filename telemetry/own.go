package telemetry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// The decision log's files are opened by name in a folder that, in user mode, the agent's own
// identity can write. So no name is trusted to be what the log made: every open refuses to follow
// a link (O_NOFOLLOW) and never waits on a named pipe (O_NONBLOCK), and the file it gets is
// checked, by descriptor, to be a regular file with one name, owned by this process's user.

// foreignError says that a name the log uses holds something the log did not make.
type foreignError struct {
	path, what string
	// device: no agent can make one (mknod needs root), so it is a misconfigured path, never
	// renamed away: /dev/null or /dev/full is someone's, not the log's.
	device bool
}

func (e *foreignError) Error() string {
	return fmt.Sprintf("%s is %s, not a file coworkbridge made", e.path, e.what)
}

// openOwn opens the existing file at path with flag, refusing anything the log did not make;
// the error is a *foreignError for such a thing and wraps fs.ErrNotExist when there is none.
func openOwn(path string, flag int) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) {
		return nil, nil, &foreignError{path: path, what: "a link or a socket"}
	}
	if errors.Is(err, syscall.EISDIR) {
		return nil, nil, &foreignError{path: path, what: "a folder"}
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if what := foreignness(fi); what != "" {
		f.Close()
		return nil, nil, &foreignError{path: path, what: what, device: fi.Mode()&fs.ModeDevice != 0}
	}
	return f, fi, nil
}

// foreignness says what is wrong with a file the log is to use; "" when nothing is.
func foreignness(fi os.FileInfo) string {
	if !fi.Mode().IsRegular() {
		return "a " + kindOf(fi.Mode())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uint64(st.Nlink) > 1 {
		return fmt.Sprintf("a file with %d names (a hard link)", st.Nlink)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Sprintf("a file owned by uid %d", st.Uid)
	}
	return ""
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "folder"
	}
	return "special file"
}

// openOrCreateOwn opens the log's file at path, or makes it. Whatever stands at the name that the
// log did not make is set aside (renamed, never followed or removed: it is evidence) and a new
// file is made; refused describes it for the caller to report, "" when there was none.
func openOrCreateOwn(path string, flag int) (f *os.File, fi os.FileInfo, refused string, err error) {
	for range 3 {
		f, fi, err = openOwn(path, flag)
		var foreign *foreignError
		switch {
		case err == nil:
			return f, fi, refused, nil
		case errors.As(err, &foreign) && foreign.device:
			return nil, nil, "", fmt.Errorf("%w: point the decision log at a file path", err)
		case errors.As(err, &foreign):
			if err := setAside(path); err != nil {
				return nil, nil, foreign.Error(), err
			}
			refused = foreign.Error() + "; it was set aside and a new file started"
		case !errors.Is(err, fs.ErrNotExist):
			return nil, nil, refused, err
		}
		f, err = os.OpenFile(path, flag|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // made by another writer (or planted) in between: look again
		}
		if err != nil {
			return nil, nil, refused, err
		}
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return nil, nil, refused, err
		}
		return f, fi, refused, nil
	}
	return nil, nil, refused, fmt.Errorf("open %s: something keeps being put at its name", path)
}

// setAside renames what stands at path out of the log's way. A rename moves the name, never what
// a link points to.
func setAside(path string) error {
	aside := path + ".refused-" + time.Now().UTC().Format("20060102T150405.000000000")
	if err := os.Rename(path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("set aside %s: %w", path, err)
	}
	return nil
}

// ownFolder makes sure dir is a real folder: created 0700 when missing; a link or anything
// else standing at its name is set aside and the folder made anew. refused describes what was
// set aside.
func ownFolder(dir string) (refused string, err error) {
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && fi.IsDir():
		return "", nil
	case err == nil:
		refused = (&foreignError{path: dir, what: "a " + kindOf(fi.Mode())}).Error() + "; it was set aside and a new folder made"
		if err := setAside(dir); err != nil {
			return refused, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	// The folders above are the installer's (or, in user mode, the user's own Library).
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return refused, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return refused, err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return refused, fmt.Errorf("make the log folder %s: something else keeps being put there", dir)
	}
	return refused, nil
}

// openRead opens a log file for reading without following a link or waiting on a pipe; a name
// holding anything but a regular file reads as missing (fs.ErrNotExist wrapped): nothing the
// log made is there.
func openRead(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("open %s: not a regular file: %w", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: a %s, not a regular file: %w", path, kindOf(fi.Mode()), fs.ErrNotExist)
	}
	return f, nil
}

// readers is who besides the owner may read the log's files: the group gid, or nobody (-1).
type readers struct{ gid int }

// fit gives the open file the mode and group readers asks for, through its descriptor: a file
// made before the configuration changed is brought in line when it is next opened.
func (r readers) fit(f *os.File, fi os.FileInfo) error {
	mode, gid := fs.FileMode(0o600), -1
	if r.gid >= 0 {
		mode, gid = 0o640, r.gid
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if gid >= 0 && ok && int(st.Gid) != gid {
		if err := f.Chown(-1, gid); err != nil {
			return fmt.Errorf("give %s to group %d: %w", f.Name(), gid, err)
		}
	}
	if fi.Mode().Perm() != mode {
		if err := f.Chmod(mode); err != nil {
			return fmt.Errorf("set the mode of %s: %w", f.Name(), err)
		}
	}
	return nil
}
