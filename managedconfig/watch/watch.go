// Package watch delivers the managed configuration again whenever it changes, for the daemon: it
// watches the folders of every place managed.json (or a Mac's managed preferences) may be, and
// reads again at every poll as well, for what a watcher misses. It reads and parses nothing
// itself (managedconfig.Loader does). It is a package of its own so that the programs that only
// read the configuration (the host hook, started on every tool call) link no file watcher.
package watch

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// settle is how long the watcher waits after the last file event before reading: an in-place
// write is a truncate followed by writes, and reading in between would see a broken file.
const settle = 100 * time.Millisecond

// Options tunes Run.
type Options struct {
	// Poll is the safety-net interval: MDM tools replace files in ways a watcher can miss, and a
	// folder that does not exist yet cannot be watched at all.
	Poll time.Duration
	// Beat is the process's metronome, which the poll ticks on; nil: a beat of its own.
	Beat   *metronome.Metronome
	Logger *slog.Logger
	// Watcher starts the file watcher; nil: fswatch.New. Tests pass a fake.
	Watcher func() (fswatch.Watcher, error)
}

// Watch is the loader's configuration, watched.
type Watch struct {
	loader *managedconfig.Loader
	// watches: folders Run watches now.
	watches atomic.Int64
}

// New watches what l loads.
func New(l *managedconfig.Loader) *Watch { return &Watch{loader: l} }

// Run calls deliver with a new Snapshot each time the configuration changes from last, until ctx
// is cancelled. It watches the folders of every candidate location with fsnotify and re-reads on
// every poll tick as well. Run returns nil when ctx is done; a failing watcher is logged and the
// poll carries on alone, so Run has no fatal errors.
func (w *Watch) Run(ctx context.Context, last managedconfig.Snapshot, opts Options, deliver func(managedconfig.Snapshot)) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Watcher == nil {
		opts.Watcher = fswatch.New
	}
	fw, err := opts.Watcher()
	if err != nil {
		log.Warn("config watcher unavailable; relying on the periodic check", "err", err, "poll", opts.Poll.String())
		fw = fswatch.Nop()
	}
	defer fw.Close()
	dirs := w.watchDirs()
	w.addWatches(fw, dirs)

	poll := opts.Beat.Ticker(opts.Poll)
	defer poll.Stop()
	pending := fswatch.NewSettle(settle)
	defer pending.Stop()

	reload := func() {
		s := w.loader.Load()
		if !s.Same(last) {
			last = s
			deliver(s)
		}
	}
	reload() // a change made between the caller's Load and the watches above is not lost
	defer w.watches.Store(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-fw.Events():
			if w.relevant(ev) {
				pending.Poke()
			}
		case err := <-fw.Errors():
			log.Warn("config watcher error; the periodic check still runs", "err", err)
		case <-pending.C():
			reload()
		case <-poll.C:
			w.addWatches(fw, dirs) // a folder created since the last tick can be watched now
			reload()
		}
	}
}

func (w *Watch) watchDirs() []string {
	var dirs []string
	for _, c := range w.loader.Candidates() {
		dirs = append(dirs, filepath.Dir(c))
	}
	return dirs
}

// addWatches adds every folder that exists; adding one already watched is harmless.
func (w *Watch) addWatches(fw fswatch.Watcher, dirs []string) {
	for _, d := range dirs {
		_ = fw.Add(d) // a missing folder is retried on the next poll
	}
	w.watches.Store(int64(fw.Len()))
}

// Watches is the number of folders Run holds watches on, for health; safe from any goroutine.
func (w *Watch) Watches() int { return int(w.watches.Load()) }

// relevant ignores events on other files in the watched folders and pure attribute changes.
func (w *Watch) relevant(ev fswatch.Event) bool {
	if ev.Op == fswatch.Chmod {
		return false
	}
	for _, c := range w.loader.Candidates() {
		if filepath.Clean(ev.Name) == filepath.Clean(c) {
			return true
		}
	}
	return false
}
