package collector

import (
	"fmt"
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

func TestAChannelEventFileTheLastPassTookStartsNoPass(t *testing.T) {
	c := &Collector{queue: make(chan *tracked, 1)}
	tr := &tracked{}
	tr.taken.add(ridA)
	c.scheduleChannel(tr, ridA) // the hook's write, reported after the pass took the file
	if len(c.queue) != 0 || tr.queued {
		t.Fatal("an event file already taken started a pass")
	}
	c.scheduleChannel(tr, ridB)
	if len(c.queue) != 1 || !tr.queued {
		t.Fatal("a new event file started no pass")
	}
}

func TestAChannelEventSeenDuringAPassStartsAnotherOnlyIfThatPassDidNotTakeIt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		took      []string
		wantAgain bool
	}{
		{"the pass took both", []string{ridA, ridB}, false},
		{"the pass took one", []string{ridA}, true},
		{"the pass took none", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Collector{queue: make(chan *tracked, 1)}
			tr := &tracked{running: true}
			c.scheduleChannel(tr, ridA)
			c.scheduleChannel(tr, ridB)
			for _, rid := range tc.took {
				tr.taken.add(rid)
			}
			c.passDone(tr)
			if again := len(c.queue) == 1; again != tc.wantAgain {
				t.Errorf("queued again: %v, want %v", again, tc.wantAgain)
			}
			if len(tr.waiting) != 0 {
				t.Errorf("waiting ids left after the pass: %v", tr.waiting)
			}
		})
	}
}

// A change seen in the session itself (a spool, a transcript) starts a pass that leaves the host
// channel alone; a channel event starts one that takes that event file by name; a generic
// schedule, a housekeeping pass and more channel events than a pass follows by name make the
// next pass list the channel.
func TestOnlyPassesThatNeedItListTheHostChannel(t *testing.T) {
	many := func(c *Collector, tr *tracked) {
		tr.running = true
		for i := range takenMax + 1 {
			c.scheduleChannel(tr, fmt.Sprintf("%032x", i))
		}
	}
	for _, tc := range []struct {
		name      string
		schedule  func(c *Collector, tr *tracked)
		wantList  bool
		wantNamed []string
	}{
		{"a spool change", func(c *Collector, tr *tracked) { c.scheduleSession(tr, false) }, false, nil},
		{"a rotated spool", func(c *Collector, tr *tracked) { c.scheduleSession(tr, true) }, true, nil},
		{"a channel event", func(c *Collector, tr *tracked) { c.scheduleChannel(tr, ridA) }, false, []string{ridA}},
		{"the same channel event twice", func(c *Collector, tr *tracked) {
			c.scheduleChannel(tr, ridA)
			c.scheduleChannel(tr, ridA)
		}, false, []string{ridA}},
		{"a rescan", func(c *Collector, tr *tracked) { c.schedule(tr, false) }, true, nil},
		{"a spool change, then a channel event", func(c *Collector, tr *tracked) {
			c.scheduleSession(tr, false)
			c.scheduleChannel(tr, ridA)
		}, false, []string{ridA}},
		{"a channel event the running pass did not take", func(c *Collector, tr *tracked) {
			tr.running = true
			c.scheduleSession(tr, false)
			c.scheduleChannel(tr, ridA)
			c.passDone(tr)
		}, false, []string{ridA}},
		{"more channel events during a pass than are followed by name", func(c *Collector, tr *tracked) {
			many(c, tr)
			c.passDone(tr)
		}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Collector{queue: make(chan *tracked, 1)}
			tr := &tracked{}
			tc.schedule(c, tr)
			if len(c.queue) != 1 {
				t.Fatal("no pass was queued")
			}
			ch := tr.passWork().ch
			if ch.list != tc.wantList {
				t.Errorf("the pass lists the channel: %v, want %v", ch.list, tc.wantList)
			}
			if !tc.wantList && !slices.Equal(ch.named, tc.wantNamed) {
				t.Errorf("the pass takes by name %v, want %v", ch.named, tc.wantNamed)
			}
		})
	}
}

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

func TestTakenRequestIDsForgetTheOldestPastTheirBound(t *testing.T) {
	var r takenRIDs
	r.add(ridA)
	for i := range takenMax - 1 {
		r.add(fmt.Sprintf("%032x", i))
	}
	if !r.has(ridA) {
		t.Fatal("forgot an id within the bound")
	}
	r.add(ridB)
	if r.has(ridA) || !r.has(ridB) {
		t.Fatal("the bound did not drop the oldest id for the newest")
	}
}

func TestAKeptHandleIsReusedUntilItsFolderIsReplacedOrIdle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "local_a")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var count atomic.Int32
	var k keptHandle
	opens := 0
	open := func() *session.Session {
		opens++
		s, err := session.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Unix(1000, 0)
	get := func() *session.Session {
		s, done := k.get(&count, dir, "", now, open)
		done()
		return s
	}
	first := get()
	if again := get(); again != first || opens != 1 {
		t.Fatalf("a second pass opened the folder again (%d opens)", opens)
	}
	// Removed and made again, as Cowork would: the handle follows the path, not the old folder.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if s := get(); s == first || opens != 2 {
		t.Fatalf("the handle stayed on the replaced folder (%d opens)", opens)
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
	s, done := k.get(&count, dir, "", time.Now(), func() *session.Session {
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
