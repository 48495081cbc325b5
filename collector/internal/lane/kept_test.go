package lane

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
)

const (
	ridA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ridB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestAPassTakesOnlyThePlainEventFilesItWasToldOf(t *testing.T) {
	root := t.TempDir()
	bridge := filepath.Join(root, session.BridgeDir)
	if err := os.MkdirAll(bridge, 0o700); err != nil {
		t.Fatal(err)
	}
	ridC := "cccccccccccccccccccccccccccccccc"
	write := func(rid string, age time.Duration) {
		p := filepath.Join(bridge, ".ev-"+rid)
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write(ridA, time.Second)
	write(ridB, time.Minute) // older: taken first
	write(ridC, 0)           // not named
	if err := os.Symlink(filepath.Join(bridge, ".ev-"+ridC), filepath.Join(bridge, ".ev-dddddddddddddddddddddddddddddddd")); err != nil {
		t.Fatal(err)
	}
	cs, err := session.OpenOwn(root)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	evs := namedEvents(cs, []string{ridA, "dddddddddddddddddddddddddddddddd", ridB, "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"})
	var got []string
	for _, ev := range evs {
		got = append(got, path.Base(ev.name))
	}
	if want := []string{".ev-" + ridB, ".ev-" + ridA}; !slices.Equal(got, want) {
		t.Errorf("taken %v, want %v (oldest first; no link, nothing missing, nothing not named)", got, want)
	}
}

func TestAKeptHandleIsReusedUntilItsFolderIsReplacedOrIdle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "local_a")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var count atomic.Int32
	var k keptHandle
	open, opens := countingOpener(t, dir)
	now := time.Unix(1000, 0)
	get := func() *session.Session {
		s, done := k.get(&count, dir, "", now, true, open)
		done()
		return s
	}
	first := get()
	if again := get(); again != first || *opens != 1 {
		t.Fatalf("a second pass opened the folder again (%d opens)", *opens)
	}
	// Removed and made again, as Cowork would: the handle follows the path, not the old folder.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if s := get(); s == first || *opens != 2 {
		t.Fatalf("the handle stayed on the replaced folder (%d opens)", *opens)
	}
	if count.Load() != 1 {
		t.Fatalf("%d handles counted as kept, want 1", count.Load())
	}
	k.releaseIdle(&count, now.Add(keptIdle/2))
	if count.Load() != 1 {
		t.Fatal("a handle used within keptIdle was released")
	}
	k.releaseIdle(&count, now.Add(2*keptIdle))
	if count.Load() != 0 || k.s != nil {
		t.Fatal("an idle handle was kept")
	}
}

func TestPastTheBoundAHandleIsOpenedForThePassAndClosedAfterIt(t *testing.T) {
	dir := t.TempDir()
	var count atomic.Int32
	count.Store(maxKept)
	var k keptHandle
	s, done := k.get(&count, dir, "", time.Now(), true, func() *session.Session {
		s, err := session.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	if s == nil || k.s != nil || count.Load() != maxKept {
		t.Fatalf("past the bound the handle was kept (count %d)", count.Load())
	}
	done()
	if _, err := s.Lstat("x"); err == nil || os.IsNotExist(err) {
		t.Errorf("the pass's own handle is still open after done: %v", err)
	}
}

// An idle session costs no descriptor: a housekeeping pass opens its own handle and closes it,
// and uses one a pass at work left kept.
func TestAHousekeepingPassKeepsNoHandleItOpened(t *testing.T) {
	dir := t.TempDir()
	var count atomic.Int32
	var k keptHandle
	open, opens := countingOpener(t, dir)
	now := time.Now()
	s, done := k.get(&count, dir, "", now, false, open)
	done()
	if s == nil || k.s != nil || count.Load() != 0 {
		t.Fatalf("a housekeeping pass kept the handle it opened (count %d)", count.Load())
	}
	if _, err := s.Lstat("x"); err == nil || os.IsNotExist(err) {
		t.Errorf("the housekeeping pass's handle is still open after done: %v", err)
	}
	kept, done := k.get(&count, dir, "", now, true, open)
	done()
	if again, done := k.get(&count, dir, "", now, false, open); again != kept || *opens != 2 {
		t.Errorf("a housekeeping pass did not use the handle a pass at work kept (%d opens)", *opens)
	} else {
		done()
	}
	if count.Load() != 1 {
		t.Errorf("%d handles counted as kept, want 1", count.Load())
	}
}

// countingOpener opens dir as a session, counting the opens.
func countingOpener(t *testing.T, dir string) (open func() *session.Session, opens *int) {
	opens = new(int)
	return func() *session.Session {
		*opens++
		s, err := session.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, opens
}
