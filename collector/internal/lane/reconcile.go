package lane

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/collector/internal/ledger"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// Reconciliation catches the bypasses nobody has thought of: the CLI's transcript records every
// tool call that ran, and each one must have reached the daemon first (the hook runs before the
// tool) and must not have been denied. A call that ran with no event, or ran although its deny
// was enforced, is an unguarded call: recorded with the transcript's input, reported, and in
// enforce the session is quarantined. Only results the CLI did not mark as errors count as
// proof that a call ran: a refusal is an error result, and so is a tool that ran and failed, and
// the two cannot be told apart. The matching itself is the ledger's (internal/ledger); this file
// feeds it and acts on what it finds.
//
// The transcript is the agent's to edit, so this is detection, not proof: an agent that rewrites
// it can hide a call from it (see THREATS.md).

const (
	// reconcileEvery bounds how often event drains also read the transcripts.
	reconcileEvery = time.Second
	// transcriptMaxLine bounds one transcript line read (they hold whole file contents).
	transcriptMaxLine = 16 << 20
	// SessionBytes is the budget of what reconciliation keeps for one session: calls awaiting
	// their result, events awaiting their call (hashes, ids and short previews, never inputs)
	// and the transcripts followed, counted by their sizes. A real session keeps a few KiB.
	SessionBytes = 1 << 20
)

// reconciler is one session's reconciliation state; it belongs to the session's worker.
type reconciler struct {
	since  time.Time // the session was first followed then
	last   time.Time // the last reconciliation
	later  bool      // a pass put off by the rate limit is asked for
	follow *transcript.Follower
	calls  *ledger.Ledger
	// versions are the Claude Code versions health has been told of, so that it hears of each
	// once rather than at every line.
	versions []string
	// over: the session went over a budget and health was told, once per hour.
	over time.Time
	// saved is the state last persisted, to write only changes.
	saved string
}

// cliVersion is the Claude Code version the session's transcripts named last, "" before any.
func (r *reconciler) cliVersion() string {
	if len(r.versions) == 0 {
		return ""
	}
	return r.versions[len(r.versions)-1]
}

// maxVersions bounds the versions one session reports: lines the agent writes can name any.
const maxVersions = 8

func newReconciler(now time.Time, limit int64) *reconciler {
	return &reconciler{since: now, calls: ledger.New(limit)}
}

// reconcile reads what the session's transcripts added and reports unguarded calls, tampered
// transcripts and forged events. force skips the rate limit (housekeeping passes).
func (l *Lane) reconcile(s *session.Session, p *Policy, force bool) {
	r := l.recon
	now := l.env.Now()
	if r.follow == nil {
		r.follow = transcript.NewFollower(storePositions{l.env.Offsets, OffsetPrefix(l.dir) + "t:"}, transcriptMaxLine, r.since)
		r.calls.Restore(l.env.Offsets.Note(OffsetPrefix(l.dir) + "r"))
	}
	if wait := reconcileEvery - now.Sub(r.last); !force && wait > 0 && !r.calls.Pending() {
		if !r.later {
			// A change in this window must still be read within seconds, not at the rescan.
			r.later = true
			l.again(Again{After: wait, Reconcile: true})
		}
		return
	}
	r.last, r.later = now, false
	// Before the transcripts: a call's receipt precedes its result.
	for _, r := range l.socket.take() {
		l.takeReceipt(r, now)
	}
	l.channel.takeReceipts(now)
	l.checkTier(s, p, now)
	var found []ledger.Finding
	var late []telemetry.Record
	rep := r.follow.Follow(s, func(name string, line []byte) {
		items, version := transcript.ParseLine(line)
		if version != "" && !slices.Contains(r.versions, version) && len(r.versions) < maxVersions {
			r.versions = append(r.versions, version)
			l.env.Health.CLIVersion(s.ID(), version)
		}
		for _, it := range items {
			found = append(found, r.calls.Take(it, now)...)
			l.learnFlow(it)
			if it.Kind != transcript.Use {
				continue
			}
			if rec, ok := l.overflow.confirm(it.ToolUseID); ok {
				late = append(late, rec)
			}
		}
	})
	l.overflow.expire(now, l.env.Limits.ForgedAfter)
	l.writeLate(late)
	if rep.Files > 0 {
		r.calls.SetFollowed()
	}
	if rep.Read > 0 {
		l.res.Commit = true // positions kept as they go: a restart resumes, never starts over
	}
	if rep.More {
		l.again(Again{After: reconcileEvery, Reconcile: true})
	}
	l.res.Read, l.res.Dirs, l.res.More = true, rep.Dirs, rep.More
	found = append(found, l.tampers(s, rep.Tampers)...)
	found = append(found, r.calls.Settle(now, l.env.Limits.ReconcileGrace, l.env.Limits.ForgedAfter)...)
	if r.calls.Pending() {
		// Events are drained before the transcript is read, so only one still on its way needs
		// the grace; look again once it has passed.
		l.again(Again{After: l.env.Limits.ReconcileGrace, Reconcile: true})
	}
	// One budget for all the session makes the daemon keep: what the other parts hold comes off
	// what the ledger may.
	others := r.follow.Footprint() + l.rids.Footprint() + l.instr.Footprint() + l.plants.Footprint() + l.overflow.footprint()
	r.calls.SetLimit(l.env.Limits.SessionBytes - others)
	if refused := r.calls.Refused(); rep.Over || refused > 0 {
		st := r.calls.Stats()
		l.overBudget(now, fmt.Sprintf("transcripts %d (bound %d); calls awaiting a result %d, events awaiting their call %d; %d bytes kept of a budget of %d (%d by the ledger, %d by transcripts, recent request ids, instruction scan and plants); %d refused",
			rep.Files, transcript.MaxFiles, st.Uses, st.Judged, st.Bytes+others, l.env.Limits.SessionBytes, st.Bytes, others, refused))
	}
	l.persist()
	if len(found) > 0 {
		l.reportFindings(p, found, now)
	}
}

// writeLate logs the records the budget held back whose call a transcript has now shown.
func (l *Lane) writeLate(late []telemetry.Record) {
	if len(late) == 0 {
		return
	}
	if err := l.env.Sink.WriteBatch(late); err != nil {
		l.env.Health.Count("", health.CodeTelemetryFailed)
		l.env.Log.Warn("cannot record the calls held back by the session's budget", "code", health.CodeTelemetryFailed, "session", l.id, "err", err)
	}
}

// tampers are the findings for what was done to the transcripts, but for their removal with the
// session itself.
func (l *Lane) tampers(s *session.Session, tms []transcript.Tamper) []ledger.Finding {
	removing := l.env.Removals.Wait(s.Dir()) > 0
	var found []ledger.Finding
	for _, tm := range tms {
		if removing && strings.Contains(tm.What, "removed") {
			continue // the session itself is going
		}
		found = append(found, ledger.Finding{Rule: ruleid.TranscriptTampered, Code: health.CodeTranscriptTampered,
			Use: ledger.Use{Tool: tm.File}, Why: tm.File + ": " + tm.What})
	}
	return found
}

// quarantineReason says what a quarantine for a finding of rule is for.
func quarantineReason(rule string) string {
	switch rule {
	case ruleid.TranscriptTampered:
		return "a transcript of the session was tampered with"
	case ruleid.ForgedEvent:
		return "an event no tool call caused reached coworkbridge"
	}
	return "a tool call ran without the guard"
}

// persist keeps the calls in flight beside the transcript positions when they changed; Commit
// writes them with the offsets.
func (l *Lane) persist() {
	r := l.recon
	data := r.calls.Persisted()
	if string(data) == r.saved {
		return
	}
	r.saved = string(data)
	l.env.Offsets.SetNote(OffsetPrefix(l.dir)+"r", data)
	l.res.Commit = true
}

// storePositions keeps a session's transcript positions in the offsets store, under a prefix.
type storePositions struct {
	s      *spool.Store
	prefix string
}

func (p storePositions) Get(name string) (spool.Position, bool) { return p.s.Lookup(p.prefix + name) }
func (p storePositions) Set(name string, pos spool.Position)    { p.s.Set(p.prefix+name, pos) }
func (p storePositions) Forget(name string)                     { p.s.Forget(p.prefix + name) }
func (p storePositions) Names() []string {
	keys := p.s.Keys(p.prefix)
	for i, k := range keys {
		keys[i] = strings.TrimPrefix(k, p.prefix)
	}
	slices.Sort(keys)
	return keys
}

// overBudget tells health and the log, once an hour, that a session went over its budget.
func (l *Lane) overBudget(now time.Time, what string) {
	if now.Sub(l.recon.over) < time.Hour {
		return
	}
	l.recon.over = now
	l.env.Log.Warn("a session went over what the daemon keeps for it; the excess is dropped", "code", health.CodeSessionOverBudget, "session", l.id, "what", what)
	l.env.Health.Count(l.id, health.CodeSessionOverBudget)
}

// reportFindings records each finding, tells health, and in enforce quarantines.
func (l *Lane) reportFindings(p *Policy, found []ledger.Finding, now time.Time) {
	recs := make([]telemetry.Record, 0, len(found))
	var quarantine *ledger.Finding
	for i, f := range found {
		recs = append(recs, judgement.Finding(now, l.id, f.RID, p.Cfg.Mode, f.Use.Tool, f.Use.Preview, f.Rule, f.Why))
		l.env.Log.Warn("reconciliation found the guard bypassed or its evidence edited", "code", f.Code, "session", l.id, "rule", f.Rule, "tool_use_id", f.Use.ID, "tool", f.Use.Tool, "why", f.Why)
		l.env.Health.CountN(l.id, f.Code, max(f.Count, 1))
		if quarantine == nil && f.Rule != ruleid.Unconfirmed {
			// An event only unconfirmed may be the CLI's own, in a session that keeps no
			// transcript: reported, never a quarantine.
			quarantine = &found[i]
		}
	}
	if err := l.env.Sink.WriteBatch(recs); err != nil {
		l.env.Health.Count("", health.CodeTelemetryFailed)
		l.env.Log.Warn("cannot record reconciliation findings in the decision log", "code", health.CodeTelemetryFailed, "session", l.id, "err", err)
	}
	if p.Cfg.Mode == managedconfig.Enforce && quarantine != nil {
		l.Quarantine(quarantineReason(quarantine.Rule) + " (" + quarantine.Why + ")")
	}
}
