package collector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// In the VM loop the hook and the agent share the bridge folder, so forgery there cannot be
// prevented (see THREATS.md); it is detected. The watcher reports every decision file that
// appears: one the daemon did not write is a forged answer. It also reports every change to the
// lease: one that is not a plain file holding a time we could have written is a plant, replaced
// at once. Either quarantines the session and leaves a record in the decision log.

// Rule ids of the detection records.
const (
	RuleForgedDecision = "coworkbridge.forged-decision"
	RulePlantedLease   = "coworkbridge.planted-lease"
	RulePlantedSpool   = "coworkbridge.planted-spool"
)

// suspect is one attempt the watcher saw, waiting to be recorded by the session's worker.
type suspect struct {
	rid, rule, what string
}

// oursKeep is how long a decision we wrote is remembered if its removal is never seen.
const oursKeep = 10 * time.Minute

// noteOurs records that we are about to write rid's decision into the session folder.
func (c *Collector) noteOurs(t *tracked, rid string) {
	c.mu.Lock()
	t.ours[rid] = c.opts.Now()
	c.mu.Unlock()
}

// decisionEvent judges a change in the session's decisions folder.
func (c *Collector) decisionEvent(t *tracked, base string, ev fswatch.Event) {
	rid, ok := strings.CutSuffix(base, ".json")
	if !ok || !claudehook.ValidRID(rid) {
		return // temporary files, ours and the hook's
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ev.Has(fswatch.Create):
		if _, mine := t.ours[rid]; !mine {
			t.suspects = append(t.suspects, suspect{rid, RuleForgedDecision,
				"a decision coworkbridge did not write appeared for request " + rid + " (a forged answer)"})
			if !t.gone && !c.stopped {
				c.scheduleLocked(t, false)
			}
		}
	case ev.Has(fswatch.Remove), ev.Has(fswatch.Rename):
		delete(t.ours, rid)
	}
}

// checkPlants records the attempts the watcher saw and verifies the lease when asked. It runs on
// the session's worker.
func (c *Collector) checkPlants(s *session.Session, t *tracked, p *policy) {
	now := c.opts.Now()
	c.mu.Lock()
	found := t.suspects
	t.suspects = nil
	check := t.checkAlive
	t.checkAlive = false
	for rid, at := range t.ours {
		if now.Sub(at) > oursKeep {
			delete(t.ours, rid)
		}
	}
	leaseUntil := c.leaseUntil
	c.mu.Unlock()
	if check {
		if what := c.verifyLease(s, leaseUntil); what != "" {
			found = append(found, suspect{"", RulePlantedLease, what})
		}
	}
	if len(found) == 0 {
		return
	}
	// Quarantine first: the session's next call is denied even if the record below is slow.
	c.Quarantine(t.id, found[0].what)
	recs := make([]telemetry.Record, 0, len(found))
	for _, f := range found {
		recs = append(recs, telemetry.Record{TS: now, RID: f.rid, Session: t.id, Agent: "cowork", Transport: telemetry.TransportSpool,
			Mode: string(p.cfg.Mode), Input: json.RawMessage("null"), Decision: claudehook.Deny, Rule: f.rule, Reason: f.what})
		c.log.Warn("attempt on the guard in a session", "code", health.CodeSessionTampered, "session", t.id, "rule", f.rule, "what", f.what)
	}
	if err := c.opts.Sink.WriteBatch(recs); err != nil {
		c.opts.Health.Count("", health.CodeTelemetryFailed)
		c.log.Warn("cannot record an attempt on the guard in the decision log", "code", health.CodeTelemetryFailed, "session", t.id, "err", err)
	}
}

// verifyLease replaces a lease that we cannot have written, and says what stood there; "" when
// the lease is ours (or gone: removing it only makes the session's hooks deny).
func (c *Collector) verifyLease(s *session.Session, leaseUntil time.Time) string {
	fi, err := s.Lstat(session.AliveFile)
	if err != nil {
		return ""
	}
	until, rerr := decisions.ReadAlive(s)
	var what string
	switch {
	case errors.Is(rerr, fs.ErrNotExist):
		return "" // withdrawn between the two looks (a shutdown does that), which is no plant
	case fi.Mode()&fs.ModeSymlink != 0:
		what = "the alive lease was replaced by a symbolic link"
	case !fi.Mode().IsRegular():
		what = fmt.Sprintf("the alive lease was replaced by a %v", fi.Mode().Type())
	case session.Links(fi) > 1:
		what = "the alive lease was replaced by a hard link to another file"
	case rerr != nil:
		what = fmt.Sprintf("the alive lease was replaced by a file coworkbridge did not write (%d bytes)", fi.Size())
	case until.After(leaseUntil):
		what = "the alive lease was replaced by one running past any coworkbridge wrote"
	default:
		return ""
	}
	if err := decisions.RemoveAlive(s); err == nil {
		c.prepare(s, leaseUntil)
	}
	return what
}

// ridSet remembers the last ridSetSize request ids recorded in a session.
type ridSet struct {
	set  map[string]bool
	ring []string
	next int
}

const ridSetSize = 4096

func (r *ridSet) has(rid string) bool { return r.set[rid] }

func (r *ridSet) add(rid string) {
	if r.set == nil {
		r.set, r.ring = map[string]bool{}, make([]string, ridSetSize)
	}
	if r.set[rid] {
		return
	}
	delete(r.set, r.ring[r.next])
	r.ring[r.next] = rid
	r.set[rid] = true
	r.next = (r.next + 1) % ridSetSize
}
