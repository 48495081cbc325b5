package realpath

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestACacheTakesThePlacesAgainOnlyWhenTheyAreOld(t *testing.T) {
	dir := t.TempDir()
	place := filepath.Join(dir, "state")
	now := time.Unix(1_800_000_000, 0)
	taken := 0
	c := &Cache{For: 10 * time.Second, Now: func() time.Time { return now },
		Places: func() (all, guard, sessions []string) { taken++; return []string{place}, nil, nil }}
	if _, ok := c.Get().Place(filepath.Join(place, "x")); ok || taken != 1 {
		t.Fatalf("a place not yet made is known (taken %d)", taken)
	}
	if err := os.Mkdir(place, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "alias")
	if err := os.Symlink(place, link); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	if c.Get(); taken != 1 {
		t.Errorf("taken again within For: %d", taken)
	}
	now = now.Add(6 * time.Second)
	if _, ok := c.Get().Place(link); !ok || taken != 2 {
		t.Errorf("a place made since is not known by its identity after For (taken %d)", taken)
	}
	now = now.Add(-time.Minute) // the clock went back
	if c.Get(); taken != 3 {
		t.Errorf("not taken again after the clock went back: %d", taken)
	}
}

// A FIFO at a sessions root (a user's own, normally missing) is passed over, never opened: the
// identities are taken for every user's calls, and one blocked open would stall them all.
func TestAFIFOAtASessionsRootIsPassedOver(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	if err := syscall.Mkfifo(root, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- append(SessionFolders([]string{root}), WithEntries(nil, []string{root})...) }()
	select {
	case got := <-done:
		if len(got) != 0 {
			t.Errorf("listed %v under a FIFO", got)
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(root, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("blocked opening a FIFO at a sessions root")
	}
}
