package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

const (
	enforceOn = `{"version":1,"cowork_enabled":true,"mode":"enforce"}`
	observeOn = `{"version":1,"cowork_enabled":true,"mode":"observe"}`
)

type fixture struct {
	config string
	loader *managedconfig.Loader
	watch  *Watch
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "mdm")
	if err := os.Mkdir(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(cfgDir, "managed.json")
	vars := map[string]string{managedconfig.EnvManagedConfig: config, managedconfig.EnvStateDir: filepath.Join(dir, "state")}
	env := managedconfig.Env{GOOS: "linux", Home: dir, Getenv: func(k string) string { return vars[k] }}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	l := managedconfig.NewDaemonLoader(env, paths)
	return fixture{config: config, loader: l, watch: New(l)}
}

func (f fixture) write(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(f.config, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// replace writes beside the file and renames over it, the way most MDM agents deliver.
func (f fixture) replace(t *testing.T, content string) {
	t.Helper()
	tmp := f.config + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.config); err != nil {
		t.Fatal(err)
	}
}

// watch runs the Watch in the background and returns a channel of what it delivers.
func watch(t *testing.T, f fixture, opts Options) <-chan managedconfig.Snapshot {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan managedconfig.Snapshot, 16)
	done := make(chan error)
	first := f.loader.Load()
	go func() { done <- f.watch.Run(ctx, first, opts, func(s managedconfig.Snapshot) { got <- s }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil on cancel", err)
		}
	})
	if opts.Watcher == nil { // the system's watcher: changes count once its folders are watched
		cbtest.WaitFor(t, "the config folder to be watched", func() bool { return f.watch.Watches() > 0 })
	} else { // a fake, in a synctest bubble: Watch has read the file once it waits
		synctest.Wait()
	}
	return got
}

func waitFor(t *testing.T, ch <-chan managedconfig.Snapshot, want func(managedconfig.Snapshot) bool) managedconfig.Snapshot {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-ch:
			if want(s) {
				return s
			}
		case <-deadline:
			t.Fatal("no matching configuration delivered")
			return managedconfig.Snapshot{}
		}
	}
}

// The poll interval is an hour in these tests, so only the fsnotify path can deliver.
func TestWatchDeliversRenameReplace(t *testing.T) {
	f := newFixture(t)
	f.write(t, observeOn)
	ch := watch(t, f, Options{Poll: time.Hour})
	f.replace(t, enforceOn)
	waitFor(t, ch, func(s managedconfig.Snapshot) bool {
		return s.Config.Mode == managedconfig.Enforce && s.Origin == managedconfig.OriginFile
	})
}

func TestWatchDeliversInPlaceWrite(t *testing.T) {
	f := newFixture(t)
	f.write(t, observeOn)
	ch := watch(t, f, Options{Poll: time.Hour})
	f.write(t, enforceOn)
	waitFor(t, ch, func(s managedconfig.Snapshot) bool {
		return s.Config.Mode == managedconfig.Enforce && s.Origin == managedconfig.OriginFile
	})
}

func TestWatchDeliversCreationAndRemoval(t *testing.T) {
	f := newFixture(t)
	ch := watch(t, f, Options{Poll: time.Hour})
	f.replace(t, enforceOn)
	waitFor(t, ch, func(s managedconfig.Snapshot) bool { return s.Enabled() })
	if err := os.Remove(f.config); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, func(s managedconfig.Snapshot) bool { return s.Origin == managedconfig.OriginNone })
}

func TestWatchDeliversInvalidAsLastGoodWithProblem(t *testing.T) {
	f := newFixture(t)
	f.write(t, enforceOn)
	ch := watch(t, f, Options{Poll: time.Hour})
	f.replace(t, `{"version":1,"mode":"sometimes"}`)
	s := waitFor(t, ch, func(s managedconfig.Snapshot) bool { return s.Origin == managedconfig.OriginLastGood })
	if s.Config.Mode != managedconfig.Enforce || s.Problem == nil {
		t.Fatalf("got %+v", s)
	}
}

func TestWatchIgnoresOtherFilesInTheFolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.write(t, enforceOn)
		w := fswatch.NewFake()
		ch := watch(t, f, Options{Poll: time.Hour, Watcher: w.Opener()})
		f.write(t, observeOn)
		w.Send(filepath.Join(filepath.Dir(f.config), "other.json"), fswatch.Create)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case s := <-ch:
			t.Fatalf("delivered %+v on an event for another file", s)
		default:
		}
		w.Send(f.config, fswatch.Chmod) // attributes only
		time.Sleep(time.Minute)
		synctest.Wait()
		if len(ch) != 0 {
			t.Fatal("delivered on a pure attribute change")
		}
		w.Send(f.config, fswatch.Write)
		time.Sleep(settle)
		synctest.Wait()
		if s := <-ch; s.Config.Mode != managedconfig.Observe {
			t.Fatalf("delivered %+v", s)
		}
	})
}

// An in-place write is a truncate and then writes: reading between them would see a broken
// file, so the watcher reads once the events have been quiet for settle.
func TestWatchReadsAnInPlaceWriteOnceItHasSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.write(t, observeOn)
		w := fswatch.NewFake()
		ch := watch(t, f, Options{Poll: time.Hour, Watcher: w.Opener()})
		f.write(t, "")
		w.Send(f.config, fswatch.Write)
		time.Sleep(settle / 2)
		f.write(t, enforceOn[:len(enforceOn)/2])
		w.Send(f.config, fswatch.Write)
		time.Sleep(settle / 2)
		f.write(t, enforceOn)
		w.Send(f.config, fswatch.Write)
		synctest.Wait()
		if len(ch) != 0 {
			t.Fatalf("read %+v before the writes settled", <-ch)
		}
		time.Sleep(settle)
		synctest.Wait()
		if s := <-ch; s.Origin != managedconfig.OriginFile || s.Config.Mode != managedconfig.Enforce {
			t.Fatalf("delivered %+v, want the whole new file", s)
		}
		if len(ch) != 0 {
			t.Fatalf("delivered again: %+v", <-ch)
		}
	})
}

func TestWatchPollAloneCatchesChangesAndNewFolders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		// The MDM folder does not exist when the watch starts: only the poll can see it appear.
		if err := os.Remove(filepath.Dir(f.config)); err != nil {
			t.Fatal(err)
		}
		noWatcher := func() (fswatch.Watcher, error) { return nil, errors.New("no inotify here") }
		ch := watch(t, f, Options{Poll: 20 * time.Millisecond, Watcher: noWatcher})
		if err := os.Mkdir(filepath.Dir(f.config), 0o755); err != nil {
			t.Fatal(err)
		}
		f.replace(t, enforceOn)
		time.Sleep(25 * time.Millisecond)
		synctest.Wait()
		if s := <-ch; !s.Enabled() || s.Config.Mode != managedconfig.Enforce {
			t.Fatalf("delivered %+v", s)
		}
	})
}

// A change that lands after the caller's Load but before the watcher is registered is still
// delivered, without waiting for the poll.
func TestWatchDeliversAChangeMadeBeforeItStarted(t *testing.T) {
	f := newFixture(t)
	f.write(t, observeOn)
	first := f.loader.Load()
	f.replace(t, enforceOn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan managedconfig.Snapshot, 4)
	go f.watch.Run(ctx, first, Options{Poll: time.Hour}, func(s managedconfig.Snapshot) { got <- s })
	waitFor(t, got, func(s managedconfig.Snapshot) bool { return s.Config.Mode == managedconfig.Enforce })
}
