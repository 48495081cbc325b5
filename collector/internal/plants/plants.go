// Package plants tells the daemon's own writes in a session's bridge folder from what the agent
// plants there. In the VM loop the hook and the agent share that folder, so a forged answer or
// a planted lease cannot be prevented; it is detected. A Watch remembers the decisions the
// daemon is about to write (noted before the write, so that the watch event can never come
// first) and collects the attempts the watcher sees until the session's worker records them.
//
// It reads and writes no file; what is an attempt and what is done about it (a record, a
// quarantine) is the collector's. A Watch is shared by the watcher and the worker: its state is
// reachable only through its methods, which take its lock.
package plants

import (
	"fmt"
	"sync"
	"time"

	"github.com/coworkbridge/coworkbridge/ruleid"
)

// oursKeep is how long a decision we wrote is remembered if its removal is never seen.
const oursKeep = 10 * time.Minute

// maxSuspects bounds the attempts kept between two Takes: past it they are counted, and
// recorded as one.
const maxSuspects = 256

// Suspect is one attempt seen, waiting to be recorded.
type Suspect struct {
	RID, Rule, What string
}

// Watch is one session's record of our writes and of the attempts seen.
type Watch struct {
	mu       sync.Mutex
	ours     map[string]time.Time // request ids whose decision file we write
	suspects []Suspect
	dropped  int  // attempts past maxSuspects since the last Take
	lease    bool // verify the lease at the next check
}

// keep adds s to the suspects, or counts it past the bound; w.mu is held.
func (w *Watch) keep(s Suspect) {
	if len(w.suspects) >= maxSuspects {
		w.dropped++
		return
	}
	w.suspects = append(w.suspects, s)
}

// Ours records that we are about to write rid's decision into the session folder.
func (w *Watch) Ours(rid string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ours == nil {
		w.ours = map[string]time.Time{}
	}
	w.ours[rid] = now
}

// DecisionAppeared reports whether a decision file that appeared for rid is a forgery (not one
// we wrote), and keeps it as a suspect if so.
func (w *Watch) DecisionAppeared(rid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, mine := w.ours[rid]; mine {
		return false
	}
	w.keep(Suspect{rid, ruleid.ForgedDecision, "a decision coworkbridge did not write appeared for request " + rid + " (a forged answer)"})
	return true
}

// DecisionGone forgets rid's decision: the hook took it.
func (w *Watch) DecisionGone(rid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.ours, rid)
}

// Suspect keeps an attempt found elsewhere (a spool planted) to be recorded with the rest.
func (w *Watch) Suspect(s Suspect) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keep(s)
}

// CheckLease asks the next Take to have the lease verified: it changed, or is about to be
// renewed over whatever stands there.
func (w *Watch) CheckLease() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lease = true
}

// Take hands over the attempts seen and whether the lease must be verified, and forgets our
// decisions whose removal was never seen.
func (w *Watch) Take(now time.Time) (found []Suspect, checkLease bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	found, checkLease = w.suspects, w.lease
	if w.dropped > 0 {
		found = append(found, Suspect{Rule: found[len(found)-1].Rule,
			What: fmt.Sprintf("%d more attempts like these, not recorded one by one", w.dropped)})
	}
	w.suspects, w.lease, w.dropped = nil, false, 0
	for rid, at := range w.ours {
		if now.Sub(at) > oursKeep {
			delete(w.ours, rid)
		}
	}
	return found, checkLease
}

// Footprint is what the watch keeps in memory, in bytes.
func (w *Watch) Footprint() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := int64(len(w.ours)) * (32 + 64)
	for _, s := range w.suspects {
		n += int64(len(s.RID)+len(s.Rule)+len(s.What)) + 48
	}
	return n
}

// RIDs remembers the last ridsKept request ids recorded in a session, to catch a spool line
// reusing one (spool lines are self-reported). It belongs to the session's worker.
type RIDs struct {
	set  map[string]bool
	ring []string
	next int
}

const ridsKept = 4096

// Footprint is what the set keeps in memory, in bytes: each id in the map and in the ring.
func (r *RIDs) Footprint() int64 { return int64(len(r.set))*(32+48) + int64(len(r.ring))*16 }

// Has reports whether rid was recorded lately.
func (r *RIDs) Has(rid string) bool { return r.set[rid] }

// Add remembers rid, forgetting the oldest past ridsKept.
func (r *RIDs) Add(rid string) {
	if r.set == nil {
		r.set, r.ring = map[string]bool{}, make([]string, ridsKept)
	}
	if r.set[rid] {
		return
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = rid
	r.set[rid] = true
	r.next = (r.next + 1) % ridsKept
}
