package collector

import (
	"fmt"
	"os"
	"path/filepath"
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
// channel alone; a channel event, a generic schedule, a housekeeping pass and a channel event the
// last pass missed all make the next pass list it.
func TestOnlyPassesThatNeedItListTheHostChannel(t *testing.T) {
	for _, tc := range []struct {
		name        string
		schedule    func(c *Collector, tr *tracked)
		wantChannel bool
	}{
		{"a spool change", func(c *Collector, tr *tracked) { c.scheduleSession(tr, false) }, false},
		{"a rotated spool", func(c *Collector, tr *tracked) { c.scheduleSession(tr, true) }, true},
		{"a channel event", func(c *Collector, tr *tracked) { c.scheduleChannel(tr, ridA) }, true},
		{"a rescan", func(c *Collector, tr *tracked) { c.schedule(tr, false) }, true},
		{"a spool change, then a channel event", func(c *Collector, tr *tracked) {
			c.scheduleSession(tr, false)
			c.scheduleChannel(tr, ridA)
		}, true},
		{"a channel event the running pass did not take", func(c *Collector, tr *tracked) {
			tr.running = true
			c.scheduleSession(tr, false)
			c.scheduleChannel(tr, ridA)
			c.passDone(tr)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Collector{queue: make(chan *tracked, 1)}
			tr := &tracked{}
			tc.schedule(c, tr)
			if len(c.queue) != 1 {
				t.Fatal("no pass was queued")
			}
			if got := tr.channelDue || tr.housekeep; got != tc.wantChannel {
				t.Errorf("the pass lists the channel: %v, want %v", got, tc.wantChannel)
			}
		})
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
