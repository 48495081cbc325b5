package managedconfig

import (
	"context"
	"github.com/coworkbridge/coworkbridge/internal/metronome"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/fswatch"
)

// settle is how long the watcher waits after the last file event before reading: an in-place
// write is a truncate followed by writes, and reading in between would see a broken file.
const settle = 100 * time.Millisecond

// WatchOptions tunes Watch.
type WatchOptions struct {
	// Poll is the safety-net interval: MDM tools replace files in ways a watcher can miss, and a
	// folder that does not exist yet cannot be watched at all.
	Poll time.Duration
	// Beat is the process's metronome, which the poll ticks on; nil: a beat of its own.
	Beat   *metronome.Metronome
	Logger *slog.Logger
	// Watcher starts the file watcher; nil: fswatch.New. Tests pass a fake.
	Watcher func() (fswatch.Watcher, error)
}

// Watch calls deliver with a new Snapshot each time the configuration changes from last, until ctx
// is cancelled. It watches the folders of every candidate location with fsnotify and re-reads on
// every poll tick as well. Watch returns nil when ctx is done; a failing watcher is logged and the
// poll carries on alone, so Watch has no fatal errors.
func (l *Loader) Watch(ctx context.Context, last Snapshot, opts WatchOptions, deliver func(Snapshot)) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Watcher == nil {
		opts.Watcher = fswatch.New
	}
	w, err := opts.Watcher()
	if err != nil {
		log.Warn("config watcher unavailable; relying on the periodic check", "err", err, "poll", opts.Poll.String())
		w = fswatch.Nop()
	}
	defer w.Close()
	dirs := l.watchDirs()
	l.addWatches(w, dirs)

	poll := opts.Beat.Ticker(opts.Poll)
	defer poll.Stop()
	pending := fswatch.NewSettle(settle)
	defer pending.Stop()

	reload := func() {
		s := l.Load()
		if !s.Same(last) {
			last = s
			deliver(s)
		}
	}
	reload() // a change made between the caller's Load and the watches above is not lost
	defer l.watches.Store(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-w.Events():
			if l.relevant(ev) {
				pending.Poke()
			}
		case err := <-w.Errors():
			log.Warn("config watcher error; the periodic check still runs", "err", err)
		case <-pending.C():
			reload()
		case <-poll.C:
			l.addWatches(w, dirs) // a folder created since the last tick can be watched now
			reload()
		}
	}
}

func (l *Loader) watchDirs() []string {
	var dirs []string
	for _, c := range l.env.ConfigCandidates() {
		dirs = append(dirs, filepath.Dir(c))
	}
	return dirs
}

// addWatches adds every folder that exists; adding one already watched is harmless.
func (l *Loader) addWatches(w fswatch.Watcher, dirs []string) {
	for _, d := range dirs {
		_ = w.Add(d) // a missing folder is retried on the next poll
	}
	l.watches.Store(int64(w.Len()))
}

// Watches is the number of folders Watch holds watches on, for health; safe from any goroutine.
func (l *Loader) Watches() int { return int(l.watches.Load()) }

// relevant ignores events on other files in the watched folders and pure attribute changes.
func (l *Loader) relevant(ev fswatch.Event) bool {
	if ev.Op == fswatch.Chmod {
		return false
	}
	for _, c := range l.env.ConfigCandidates() {
		if filepath.Clean(ev.Name) == filepath.Clean(c) {
			return true
		}
	}
	return false
}
