// Package fswatch is the one file watcher of coworkbridge: folders watched for changes to the
// entries in them, behind a small interface so that the packages that watch (the config loader,
// the injector, the collector) can be tested with a hand-written Fake under testing/synctest.
// In production it is fsnotify (inotify on Linux, kqueue on macOS).
//
// It never watches through a symbolic link (both inotify and kqueue follow one given to them),
// and it promises no delivery: events are lost on a queue overflow, on a folder replaced, and on
// folders created between a listing and a watch, which is why every caller also rescans on a
// timer. It does not debounce by itself; Settle does, for a caller's select loop.
package fswatch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Op is what happened to the entry an event names; one event may carry several.
type Op = fsnotify.Op

// The operations an event carries.
const (
	Create = fsnotify.Create
	Write  = fsnotify.Write
	Remove = fsnotify.Remove
	Rename = fsnotify.Rename
	Chmod  = fsnotify.Chmod
)

// Event is a change to the entry Name (an absolute path) in a watched folder, or to the folder
// itself. It is fsnotify's own, so that its events reach the caller's select loop directly:
// a goroutine passing them on cost every event two more thread hand-offs, the larger part of
// the daemon's cost of an event it has nothing to do for.
type Event = fsnotify.Event

// Gone reports whether the event's entry left its name: removed or renamed away.
func Gone(e Event) bool { return e.Has(Remove) || e.Has(Rename) }

// Watcher watches folders. Its methods are safe for concurrent use.
type Watcher interface {
	// Add watches the folder dir. A link, or anything but a folder, is refused with ErrNotDir;
	// adding a folder watched already is harmless.
	Add(dir string) error
	// Remove stops watching dir; it fails harmlessly when the kernel dropped the watch already.
	Remove(dir string) error
	// Events delivers changes; Errors, failures such as a queue overflow (events were lost).
	// Both are nil for a watcher that watches nothing (Nop), and closed by Close: a select loop
	// closes its watcher only once it has left the loop.
	Events() <-chan Event
	Errors() <-chan error
	// Len is the number of folders watched, for health.
	Len() int
	Close() error
}

// ErrNotDir refuses a watch on a link or a file.
var ErrNotDir = errors.New("not a folder (links are never watched)")

// New starts a watcher backed by the operating system.
func New() (Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("start a file watcher: %w", err)
	}
	return &notify{w: w}, nil
}

// notify adapts fsnotify.
type notify struct{ w *fsnotify.Watcher }

func (n *notify) Add(dir string) error {
	if err := isDir(dir); err != nil {
		return err
	}
	return n.w.Add(dir)
}

func (n *notify) Remove(dir string) error { return n.w.Remove(dir) }
func (n *notify) Events() <-chan Event    { return n.w.Events }
func (n *notify) Errors() <-chan error    { return n.w.Errors }
func (n *notify) Len() int                { return len(n.w.WatchList()) }
func (n *notify) Close() error            { return n.w.Close() }

// isDir refuses anything but a real folder at dir.
func isDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("watch %s: %w", dir, ErrNotDir)
	}
	return nil
}

// Nop is a watcher that watches nothing: what a caller runs on when the system's watcher cannot
// start, relying on its rescans alone.
func Nop() Watcher { return nop{} }

type nop struct{}

func (nop) Add(string) error     { return errors.New("no file watcher") }
func (nop) Remove(string) error  { return nil }
func (nop) Events() <-chan Event { return nil }
func (nop) Errors() <-chan error { return nil }
func (nop) Len() int             { return 0 }
func (nop) Close() error         { return nil }

// Settle fires once a burst of events has been quiet for its delay, so that a burst is handled
// once: call Poke on each event and select on C. It is a stopped timer until poked, and is used
// by one goroutine.
type Settle struct {
	t     *time.Timer
	delay time.Duration
}

// NewSettle returns a Settle with the given delay.
func NewSettle(delay time.Duration) *Settle {
	t := time.NewTimer(delay)
	t.Stop()
	return &Settle{t: t, delay: delay}
}

// Poke (re)starts the delay.
func (s *Settle) Poke() { s.t.Reset(s.delay) }

// C fires once the delay has passed since the last Poke.
func (s *Settle) C() <-chan time.Time { return s.t.C }

// Stop discards a pending firing.
func (s *Settle) Stop() { s.t.Stop() }

// ErrMoved refuses a watch whose folder was swapped, or whose path gained a link, while the watch
// was being added: the kernel may have placed it on another folder, so it is dropped.
var ErrMoved = errors.New("the folder changed while its watch was added")

// AddInside watches dir, a folder inside the trusted folder top, only if no step of the path
// below top is a link, before and after the watch is added, and the folder is the same one
// throughout. Both inotify and kqueue resolve the whole path themselves, following links in any
// step of it; a hostile session that swaps one in during the add would otherwise leave a watch on
// a folder outside it. What remains is a swap there and back between the add and the check after
// it, which leaves a watch whose events are only ever taken as hints to look again.
//
// It returns the folder as it was found once watched, so that a caller can tell later whether
// the folder at dir is still that one, unchanged.
func AddInside(w Watcher, top, dir string) (fs.FileInfo, error) {
	before, err := inside(top, dir)
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		return nil, err
	}
	after, err := inside(top, dir)
	if err == nil && !os.SameFile(before, after) {
		err = fmt.Errorf("watch %s: %w", dir, ErrMoved)
	}
	if err != nil {
		_ = w.Remove(dir)
		return nil, err
	}
	return after, nil
}

// inside checks every step from top down to dir with Lstat and returns dir's.
func inside(top, dir string) (fs.FileInfo, error) {
	top, dir = filepath.Clean(top), filepath.Clean(dir)
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("watch %s: not inside %s", dir, top)
	}
	p := top
	fi, err := os.Lstat(p)
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
			return nil, fmt.Errorf("watch %s: %s: %w", dir, p, ErrNotDir)
		}
		if part == "." {
			break
		}
		p = filepath.Join(p, part)
		fi, err = os.Lstat(p)
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, fmt.Errorf("watch %s: %w", dir, ErrNotDir)
	}
	return fi, nil
}
