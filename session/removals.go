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
// cause (inside the mounted .claude, outputs and uploads) may hold back the daemon's writes, once
// in the life of a session and never again: an agent deleting files in restarting bursts cannot
// keep a file of ours away, while a real deletion of the session (which also takes entries the
// agent cannot reach) holds for as long as it runs. Repairs of files that exist never wait at all
// (Session.Replace cannot bring back a removed name); only creations do.
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
	// reach is when removals the agent can make first held writes back in a session: they hold
	// until RemovalHold after it, once per session, however many bursts follow.
	reach map[string]time.Time
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
	return &Removals{now: now, bursts: map[string]*burst{}, reach: map[string]time.Time{}}
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
	if _, ok := r.reach[dir]; !ok && !b.outOfReach {
		r.reach[dir] = now
	}
	if len(r.bursts) > 64 || len(r.reach) > maxReach {
		r.pruneLocked(now)
	}
}

// maxReach bounds the sessions whose one agent-reachable hold is remembered. Sessions are
// Cowork's to create, not the agent's, so the bound is reached only by a daemon that has seen
// thousands of sessions; the oldest memories then go first (Forget drops a session that is gone).
const maxReach = 4096

// Forget drops what is known of the session at dir: it is gone from the Mac.
func (r *Removals) Forget(dir string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.bursts, dir)
	delete(r.reach, dir)
}

// Wait is how long to hold back writes in the session at dir: zero when no removal is going on in
// it, or when only removals the agent could have caused are, and they have had their one hold of
// RemovalHold in this session already.
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
		wait = min(wait, r.reach[dir].Add(RemovalHold).Sub(now))
	}
	return max(wait, 0)
}

func (r *Removals) pruneLocked(now time.Time) {
	for dir, b := range r.bursts {
		if now.Sub(b.last) >= RemovalQuiet {
			delete(r.bursts, dir)
		}
	}
	for len(r.reach) > maxReach {
		oldest, at := "", now
		for dir, t := range r.reach {
			if t.Before(at) {
				oldest, at = dir, t
			}
		}
		if oldest == "" {
			return
		}
		delete(r.reach, oldest)
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
