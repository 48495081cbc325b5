// Package runfile reads, so that they can be judged, the files a shell call runs (its scripts,
// Makefile, package.json): as the user the reading process runs as, regular files only, within a
// size bound, never waiting on a FIFO or a device, and for a call whose shell runs in Cowork's VM,
// only inside the session's folder and through no link out of it. It judges nothing and writes
// nothing; which files a call runs is the classifier's to say.
package runfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
)

// ErrOutOfReach is a path the reader cannot see as the call's shell does: a folder only the VM
// has, or a path on the Mac for a shell in the VM.
var ErrOutOfReach = errors.New("not a path this reader can see as the call's shell sees it")

// Reader reads the files one call runs.
type Reader struct {
	// Home stands for ~ on the Mac ("" : a path from ~ is out of reach).
	Home string
	// Session is the folder of the session the call comes from; when set, paths in the VM's
	// view of it (/sessions/<name>/mnt/<folder>/…) are read inside it, through no link out of it.
	Session string
	// VM: the call's shell runs in Cowork's VM, so that only the session's folder is the same
	// file for it and for this reader: every other path is out of reach.
	VM bool
}

// Read is the content of the file at p (absolute or from ~); "" with no error for a file that
// does not exist, which runs nothing. A file that is not regular, or larger than
// facts.MaxRunFileBytes, is an error: what it would run is unknown.
func (r Reader) Read(p string) (string, error) {
	if rel, ok := guestPath(p); ok && r.Session != "" {
		return r.readGuest(p, rel)
	}
	if r.VM {
		return "", fmt.Errorf("read %s: %w", p, ErrOutOfReach)
	}
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		if r.Home == "" || rest != "" && !strings.HasPrefix(rest, "/") {
			return "", fmt.Errorf("read %s: %w", p, ErrOutOfReach) // ~ada/x: another user's home
		}
		p = r.Home + rest
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("read %s: a relative path: %w", p, ErrOutOfReach)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return readOpened(p, f, err)
}

// readGuest reads rel inside the session's folder. The VM mounts more than the session's own
// folders at /sessions/<name>/mnt (folders of the user's, beside them): a top folder the session
// does not hold is out of reach, never a file that does not exist.
func (r Reader) readGuest(p, rel string) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("read %s: the session's folder itself: %w", p, ErrOutOfReach)
	}
	root, err := os.OpenRoot(r.Session)
	if err != nil {
		return "", fmt.Errorf("open the session's folder %s: %w", r.Session, err)
	}
	defer root.Close()
	top, _, _ := strings.Cut(rel, "/")
	if _, err := root.Lstat(top); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read %s: %s is not the session's own: %w", p, top, ErrOutOfReach)
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return readOpened(p, f, err)
}

// GuestPath is p below a session's folder as the VM sees it (/sessions/<name>/mnt/<rel>): rel,
// and whether p is such a path ("" for the mount itself).
func GuestPath(p string) (rel string, ok bool) { return guestPath(p) }

func guestPath(p string) (rel string, ok bool) {
	rest, ok := strings.CutPrefix(path.Clean(p), "/sessions/")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "/")
	if !ok {
		return "", false
	}
	if rest == "mnt" {
		return "", true
	}
	rel, ok = strings.CutPrefix(rest, "mnt/")
	return rel, ok
}

func readOpened(p string, f *os.File, err error) (string, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read %s: not a regular file (%s)", p, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, facts.MaxRunFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	if len(b) > facts.MaxRunFileBytes {
		if compiled(b) {
			return string(b[:headBytes]), nil // a program built, judged by its name: its head says so
		}
		return "", fmt.Errorf("read %s: more than the %d bytes judged", p, facts.MaxRunFileBytes)
	}
	return string(b), nil
}

// headBytes is how much of a file tells a compiled program from a script.
const headBytes = 512

// compiled reports a file that is a compiled program, not text: an ELF or Mach-O header, or a NUL
// in its first bytes (no script has one).
func compiled(b []byte) bool {
	head := b[:min(len(b), headBytes)]
	for _, magic := range []string{"\x7fELF", "\xcf\xfa\xed\xfe", "\xce\xfa\xed\xfe", "\xca\xfe\xba\xbe"} {
		if strings.HasPrefix(string(head), magic) {
			return true
		}
	}
	return bytes.IndexByte(head, 0) >= 0
}
