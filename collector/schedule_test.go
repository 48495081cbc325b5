package collector

import (
	"fmt"
	"slices"
	"testing"

	"github.com/coworkbridge/coworkbridge/collector/internal/lane"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

const (
	ridA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	ridB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestAChannelEventFileTheLastPassTookStartsNoPass(t *testing.T) {
	c := New(managedconfig.Config{}, nil, Options{})
	tr := &entry{}
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
			c := New(managedconfig.Config{}, nil, Options{})
			tr := &entry{running: true}
			c.scheduleChannel(tr, ridA)
			c.scheduleChannel(tr, ridB)
			c.passDone(tr, false, lane.Result{Taken: tc.took})
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
	many := func(c *Collector, tr *entry) {
		tr.running = true
		for i := range takenMax + 1 {
			c.scheduleChannel(tr, fmt.Sprintf("%032x", i))
		}
	}
	for _, tc := range []struct {
		name      string
		schedule  func(c *Collector, tr *entry)
		wantList  bool
		wantNamed []string
	}{
		{"a spool change", func(c *Collector, tr *entry) { c.scheduleFor(tr, lane.Again{}) }, false, nil},
		{"a rotated spool", func(c *Collector, tr *entry) { c.scheduleFor(tr, lane.Again{Housekeep: true}) }, true, nil},
		{"a channel event", func(c *Collector, tr *entry) { c.scheduleChannel(tr, ridA) }, false, []string{ridA}},
		{"the same channel event twice", func(c *Collector, tr *entry) {
			c.scheduleChannel(tr, ridA)
			c.scheduleChannel(tr, ridA)
		}, false, []string{ridA}},
		{"a rescan", func(c *Collector, tr *entry) { c.schedule(tr, false) }, true, nil},
		{"a spool change, then a channel event", func(c *Collector, tr *entry) {
			c.scheduleFor(tr, lane.Again{})
			c.scheduleChannel(tr, ridA)
		}, false, []string{ridA}},
		{"a channel event the running pass did not take", func(c *Collector, tr *entry) {
			tr.running = true
			c.scheduleFor(tr, lane.Again{})
			c.scheduleChannel(tr, ridA)
			c.passDone(tr, false, lane.Result{})
		}, false, []string{ridA}},
		{"more channel events during a pass than are followed by name", func(c *Collector, tr *entry) {
			many(c, tr)
			c.passDone(tr, false, lane.Result{})
		}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(managedconfig.Config{}, nil, Options{})
			tr := &entry{}
			tc.schedule(c, tr)
			if len(c.queue) != 1 {
				t.Fatal("no pass was queued")
			}
			ch := c.workLocked(tr).Channel
			if ch.List != tc.wantList {
				t.Errorf("the pass lists the channel: %v, want %v", ch.List, tc.wantList)
			}
			if !tc.wantList && !slices.Equal(ch.Named, tc.wantNamed) {
				t.Errorf("the pass takes by name %v, want %v", ch.Named, tc.wantNamed)
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
