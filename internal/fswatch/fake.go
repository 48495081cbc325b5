package fswatch

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
)

// Fake is a Watcher for tests: it watches nothing by itself; the test sends the events it wants
// the code under test to see, and asks which folders are watched. Like the real watcher it
// refuses links and files, so code that must never watch through a link is tested as it runs.
// Its channels are unbuffered, so Send returns once the event is received.
type Fake struct {
	mu      sync.Mutex
	watched []string
	closed  bool
	events  chan Event
	errs    chan error
	// Refuse, when set, makes Add fail for the folders it reports, as a full watch table does.
	Refuse func(dir string) bool
}

// NewFake returns a Fake watching nothing.
func NewFake() *Fake { return &Fake{events: make(chan Event), errs: make(chan error)} }

func (f *Fake) Add(dir string) error {
	if err := isDir(dir); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Refuse != nil && f.Refuse(dir) {
		return errors.New("fake: watch refused")
	}
	if !slices.Contains(f.watched, dir) {
		f.watched = append(f.watched, dir)
	}
	return nil
}

func (f *Fake) Remove(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.watched, dir)
	if i < 0 {
		return errors.New("fake: not watched")
	}
	f.watched = slices.Delete(f.watched, i, i+1)
	return nil
}

func (f *Fake) Events() <-chan Event { return f.events }
func (f *Fake) Errors() <-chan error { return f.errs }

func (f *Fake) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watched)
}

func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

// Watched reports whether dir is watched.
func (f *Fake) Watched(dir string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.watched, dir)
}

// Closed reports whether the code under test closed the watcher.
func (f *Fake) Closed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Send delivers an event, as the kernel would after a change to name; it blocks until the code
// under test receives it.
func (f *Fake) Send(name string, op Op) { f.events <- Event{Name: name, Op: op} }

// Change delivers an event for name only where the kernel would: when name's folder, or name
// itself (a watched folder), is watched. It reports whether it delivered, so that a test finds
// out when the code under test was not watching where it should have been.
func (f *Fake) Change(name string, op Op) bool {
	if !f.Watched(filepath.Dir(name)) && !f.Watched(name) {
		return false
	}
	f.Send(name, op)
	return true
}

// Fail delivers an error, as a queue overflow would.
func (f *Fake) Fail(err error) { f.errs <- err }

// Opener returns a constructor that hands out f, for the packages' options.
func (f *Fake) Opener() func() (Watcher, error) { return func() (Watcher, error) { return f, nil } }
