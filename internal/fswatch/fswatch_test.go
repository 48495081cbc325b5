package fswatch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"
)

// Both watchers refuse a link and a file: inotify and kqueue would follow a link given to them.
func TestNeitherWatcherWatchesThroughALink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o700)
	os.Symlink(real, filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for name, ww := range map[string]Watcher{"fsnotify": w, "fake": NewFake()} {
		for _, bad := range []string{"link", "file"} {
			if err := ww.Add(filepath.Join(dir, bad)); !errors.Is(err, ErrNotDir) {
				t.Errorf("%s: Add(%s) = %v, want ErrNotDir", name, bad, err)
			}
		}
		if err := ww.Add(real); err != nil || ww.Len() != 1 {
			t.Errorf("%s: Add(real) = %v, %d watched", name, err, ww.Len())
		}
		if err := ww.Remove(real); err != nil || ww.Len() != 0 {
			t.Errorf("%s: Remove(real) = %v, %d watched", name, err, ww.Len())
		}
	}
}

func TestTheSystemWatcherDeliversAChangeInAWatchedFolder(t *testing.T) {
	dir := t.TempDir()
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "spool")
	os.WriteFile(name, []byte("x"), 0o600)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-w.Events():
			if ev.Name == name && ev.Has(Create) {
				return
			}
		case err := <-w.Errors():
			t.Fatal(err)
		case <-timeout:
			t.Fatal("no create event in 10 s")
		}
	}
}

func TestNopWatchesNothingAndNeverDelivers(t *testing.T) {
	w := Nop()
	if w.Add(t.TempDir()) == nil || w.Len() != 0 || w.Events() != nil || w.Errors() != nil {
		t.Error("Nop must refuse every watch and have no channels")
	}
}

func TestSettleFiresOnceABurstHasBeenQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSettle(100 * time.Millisecond)
		fired := func() bool {
			select {
			case <-s.C():
				return true
			default:
				return false
			}
		}
		for range 5 { // a burst, 50 ms apart: never quiet for 100 ms
			s.Poke()
			time.Sleep(50 * time.Millisecond)
			synctest.Wait()
			if fired() {
				t.Fatal("fired inside the burst")
			}
		}
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		if !fired() {
			t.Fatal("did not fire 110 ms after the last poke")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if fired() {
			t.Fatal("fired twice for one burst")
		}
		s.Poke()
		s.Stop()
		time.Sleep(time.Second)
		synctest.Wait()
		if fired() {
			t.Fatal("fired after Stop")
		}
	})
}

func TestTheFakeDeliversWhatTheTestSends(t *testing.T) {
	f := NewFake()
	got := make(chan Event, 1)
	go func() { got <- <-f.Events() }()
	f.Send("/x/events.jsonl", Write|Chmod)
	if ev := <-got; ev.Name != "/x/events.jsonl" || !ev.Has(Write) || Gone(ev) {
		t.Errorf("event %v", ev)
	}
	dir := t.TempDir()
	if f.Change(filepath.Join(dir, "x"), Create) {
		t.Error("delivered a change in a folder nobody watches")
	}
	f.Add(dir)
	go func() { got <- <-f.Events() }()
	if !f.Change(filepath.Join(dir, "x"), Create) || (<-got).Name != filepath.Join(dir, "x") {
		t.Error("a change in a watched folder was not delivered")
	}
	f.Remove(dir)
	f.Refuse = func(string) bool { return true }
	if f.Add(dir) == nil || f.Watched(dir) {
		t.Error("a refused watch was taken")
	}
}

func TestAddInsideRefusesALinkAtAnyStepBelowTheTrustedFolder(t *testing.T) {
	top, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(outside, "decisions"), 0o700)
	os.Symlink(outside, filepath.Join(top, "bridge"))
	for name, w := range map[string]Watcher{"fake": NewFake(), "fsnotify": must(t, New)} {
		if _, err := AddInside(w, top, filepath.Join(top, "bridge", "decisions")); !errors.Is(err, ErrNotDir) {
			t.Errorf("%s: AddInside through a linked step = %v, want ErrNotDir", name, err)
		}
		if w.Len() != 0 {
			t.Errorf("%s: %d watches left", name, w.Len())
		}
		if _, err := AddInside(w, top, filepath.Join(outside, "decisions")); err == nil {
			t.Errorf("%s: a folder outside the trusted one was watched", name)
		}
		w.Close()
	}
}

// swapping swaps the folder for another (a link to outside) just as the watch is added, as a
// hostile session racing the daemon would.
type swapping struct {
	Watcher
	swap func()
}

func (s swapping) Add(dir string) error { s.swap(); return s.Watcher.Add(dir) }

func TestAddInsideDropsAWatchWhoseFolderWasSwappedDuringTheAdd(t *testing.T) {
	for _, name := range []string{"for a link", "for another folder"} {
		t.Run(name, func(t *testing.T) {
			top, outside := t.TempDir(), t.TempDir()
			dir := filepath.Join(top, "bridge")
			os.Mkdir(dir, 0o700)
			fake := NewFake()
			w := swapping{fake, func() {
				os.Rename(dir, dir+".old")
				if name == "for a link" {
					os.Symlink(outside, dir)
				} else {
					os.Mkdir(dir, 0o700)
				}
			}}
			if _, err := AddInside(w, top, dir); err == nil {
				t.Error("the watch on a swapped folder was kept")
			}
			if fake.Len() != 0 {
				t.Errorf("%d watches left", fake.Len())
			}
		})
	}
}

func TestAddInsideWatchesAPlainFolder(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "a", "b")
	os.MkdirAll(dir, 0o700)
	f := NewFake()
	fi, err := AddInside(f, top, dir)
	if err != nil || !f.Watched(dir) {
		t.Errorf("AddInside = %v, watched %v", err, f.Watched(dir))
	}
	if want, _ := os.Lstat(dir); fi == nil || !os.SameFile(fi, want) {
		t.Errorf("AddInside returned %v, not the folder watched", fi)
	}
	if _, err := AddInside(f, top, top); err != nil {
		t.Errorf("the trusted folder itself: %v", err)
	}
}

func must(t *testing.T, open func() (Watcher, error)) Watcher {
	t.Helper()
	w, err := open()
	if err != nil {
		t.Fatal(err)
	}
	return w
}
