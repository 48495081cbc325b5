package session

import (
	"sync"
	"time"
)

// How long removals hold back the daemon's own writes in a session. A removal in progress (Cowork
// deleting the session, depth first) empties one folder after another; anything the daemon puts
// back meanwhile (settings.json, our folder, the lease) makes the removal's last rmdir fail with
// "directory not empty" and leaves a ghost session that stays hooked. Quiet is the gap between two
// removals after which the burst counts as over. Hold bounds how long removals the agent itself can
// cause (inside the mounted .claude, outputs and uploads) may hold back a repair: without it, an
// agent deleting files in a loop would keep its settings unrepaired.
const (
	RemovalQuiet = 500 * time.Millisecond
	RemovalHold  = 5 * time.Second
)

// Removals remembers the bursts of removals seen in each session, so that the daemon does not
// undo a session's deletion while it runs. It is safe for concurrent use: the injector and the
// collector watch different folders of the same sessions and share one.
//
// It holds one small entry per session with a removal in its last burst; entries are dropped once
// their burst is over, so it stays bounded by the sessions being changed at once.
type Removals struct {
	now func() time.Time

	mu     sync.Mutex
	bursts map[string]*burst // by session folder
}

type burst struct {
	first, last time.Time
	// outOfReach: a removal the agent cannot cause was part of this burst (an entry of the session
	// folder itself, or its metadata file beside it): the session is being deleted from the Mac,
	// and the burst holds writes back for as long as it lasts.
	outOfReach bool
}

// NewRemovals returns an empty record; now is the clock (time.Now when nil).
func NewRemovals(now func() time.Time) *Removals {
	if now == nil {
		now = time.Now
	}
	return &Removals{now: now, bursts: map[string]*burst{}}
}

// Saw notes the removal of rel, a name relative to the session folder dir (forward slashes; "" for
// the folder itself, MetadataName for the metadata file beside it).
func (r *Removals) Saw(dir, rel string) {
	if r == nil {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bursts[dir]
	if b == nil || now.Sub(b.last) >= RemovalQuiet {
		b = &burst{first: now}
		r.bursts[dir] = b
	}
	b.last = now
	b.outOfReach = b.outOfReach || !agentReachable(rel)
	if len(r.bursts) > 64 {
		r.pruneLocked(now)
	}
}

// Wait is how long to hold back writes in the session at dir: zero when no removal is going on in
// it (or removals the agent could have caused have held it back for RemovalHold already).
func (r *Removals) Wait(dir string) time.Duration {
	if r == nil {
		return 0
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bursts[dir]
	if b == nil {
		return 0
	}
	wait := b.last.Add(RemovalQuiet).Sub(now)
	if wait <= 0 {
		delete(r.bursts, dir)
		return 0
	}
	if !b.outOfReach {
		wait = min(wait, b.first.Add(RemovalHold).Sub(now))
	}
	return max(wait, 0)
}

func (r *Removals) pruneLocked(now time.Time) {
	for dir, b := range r.bursts {
		if now.Sub(b.last) >= RemovalQuiet {
			delete(r.bursts, dir)
		}
	}
}

// RemovalSign reports whether the removal of rel (relative to the session folder) can be part of
// the session's deletion worth holding writes for: the session folder's own entries, and in
// .claude the files a deletion must take (settings.json, our folder, the transcripts). The CLI's
// own lock and temporary files come and go in .claude all the time; counting them would hold
// every repair back at each CLI start.
func RemovalSign(rel string) bool {
	if !agentReachable(rel) {
		return true
	}
	switch rel {
	case SettingsFile, BridgeDir, DecisionsDir, ClaudeDir + "/projects", "outputs/" + ClaudeDir:
		return true
	}
	return false
}

// MetadataName stands, in Removals.Saw, for the session's metadata file local_<uuid>.json, which
// lies beside the session folder rather than in it.
const MetadataName = "../metadata"

// agentReachable reports whether the agent in the session's VM can reach rel, a name relative to
// the session folder: what lies inside the folders mounted into the VM can be created, changed or
// removed from there; the session folder's own entries (the mount points themselves, audit.jsonl)
// and its metadata file cannot.
func agentReachable(rel string) bool {
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' {
			switch rel[:i] {
			case ClaudeDir, "outputs", "uploads":
				return true
			}
			return false
		}
	}
	return false
}
