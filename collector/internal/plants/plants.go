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
	"sync"
	"time"
)

// Rule ids of the detection records.
const (
	RuleForgedDecision = "coworkbridge.forged-decision"
	RulePlantedLease   = "coworkbridge.planted-lease"
	RulePlantedSpool   = "coworkbridge.planted-spool"
)

// oursKeep is how long a decision we wrote is remembered if its removal is never seen.
const oursKeep = 10 * time.Minute

// Suspect is one attempt seen, waiting to be recorded.
type Suspect struct {
	RID, Rule, What string
}

// Watch is one session's record of our writes and of the attempts seen.
type Watch struct {
	mu       sync.Mutex
	ours     map[string]time.Time // request ids whose decision file we write
	suspects []Suspect
	lease    bool // verify the lease at the next check
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
	w.suspects = append(w.suspects, Suspect{rid, RuleForgedDecision,
		"a decision coworkbridge did not write appeared for request " + rid + " (a forged answer)"})
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
	w.suspects = append(w.suspects, s)
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
	w.suspects, w.lease = nil, false
	for rid, at := range w.ours {
		if now.Sub(at) > oursKeep {
			delete(w.ours, rid)
		}
	}
	return found, checkLease
}

// RIDs remembers the last ridsKept request ids recorded in a session, to catch a spool line
// reusing one (spool lines are self-reported). It belongs to the session's worker.
type RIDs struct {
	set  map[string]bool
	ring []string
	next int
}

const ridsKept = 4096

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
