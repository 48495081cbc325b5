package collector

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
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
// the two cannot be told apart.
//
// The transcript is the agent's to edit, so this is detection, not proof: an agent that rewrites
// it can hide a call from it (see THREATS.md).

// Rules of the records reconciliation leaves.
const (
	// RuleUnguarded: a call ran without the guard.
	RuleUnguarded = "coworkbridge.unguarded-call"
	// RuleTranscriptTampered: a transcript was changed as the CLI never changes one.
	RuleTranscriptTampered = "coworkbridge.transcript-tampered"
	// RuleForgedEvent: an event no tool call of the session caused.
	RuleForgedEvent = "coworkbridge.forged-event"
)

const (
	// reconcileEvery bounds how often event drains also read the transcripts.
	reconcileEvery = time.Second
	// transcriptMaxLine bounds one transcript line read (they hold whole file contents).
	transcriptMaxLine = 16 << 20
	// SessionBytes is the budget of what reconciliation keeps for one session: calls awaiting
	// their result, events awaiting their call (hashes, ids and short previews, never inputs)
	// and the transcripts followed, counted by their sizes. A real session keeps a few KiB.
	SessionBytes = 1 << 20
	judgedKeep   = time.Hour
	maxPersisted = 256
	// maxKept bounds a tool name or request id kept (they come from the session).
	maxKept = 256
)

// reconciler is one session's reconciliation state; it belongs to the session's worker.
type reconciler struct {
	since  time.Time // the session was first followed then
	last   time.Time // the last reconciliation
	later  bool      // a pass put off by the rate limit is scheduled
	follow *transcript.Follower
	// followed: the session has transcripts, so every event must name a call they show.
	followed bool
	judged   map[string]judgedCall // by tool_use_id, until the call's result
	uses     map[string]use        // calls seen in the transcripts, awaiting a result
	pending  map[string]time.Time  // results that ran with no event yet, since when
	// versions are the Claude Code versions health has been told of, so that it hears of each
	// once rather than at every line.
	versions []string
	// over: the session went over a budget and health was told, once per hour.
	over time.Time
	// bytes is what judged, uses and pending hold (see the sizes below), limit what they may,
	// refused how many entries did not fit since the last report.
	bytes, limit int64
	refused      int
	// saved is the state last persisted, to write only changes.
	saved string
}

type judgedCall struct {
	Denied bool                   `json:"denied,omitempty"` // an enforced deny
	At     time.Time              `json:"at"`
	Input  transcript.Fingerprint `json:"input"`
	// Seen: a transcript shows the call. Until then the event's tool, preview and request id
	// are kept for the forged-event record.
	Seen    bool            `json:"seen,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	RID     string          `json:"rid,omitempty"`
	Preview json.RawMessage `json:"preview,omitempty"`
}

// use is what is kept of a call the transcript shows, until its result: never its whole input,
// which can hold a whole file (a session writing huge inputs must not grow the daemon).
type use struct {
	ID      string                 `json:"id"`
	Tool    string                 `json:"tool"`
	Preview json.RawMessage        `json:"preview"` // transcript.Preview of the input
	Input   transcript.Fingerprint `json:"input"`
}

// maxVersions bounds the versions one session reports: lines the agent writes can name any.
const maxVersions = 8

func newReconciler(now time.Time, limit int64) *reconciler {
	return &reconciler{since: now, judged: map[string]judgedCall{}, uses: map[string]use{}, pending: map[string]time.Time{}, limit: limit}
}

// Sizes of what a reconciler keeps, as bytes of the daemon's memory: the strings and maps held,
// with a fixed allowance for a map entry's own cost.
const entryCost = 96

func (j judgedCall) size(id string) int64 {
	return int64(entryCost+len(id)+len(j.Tool)+len(j.RID)+len(j.Preview)) + j.Input.Size()
}

func (u use) size(id string) int64 {
	return int64(entryCost+len(id)+len(u.ID)+len(u.Tool)+len(u.Preview)) + u.Input.Size()
}

func pendingSize(id string) int64 { return int64(entryCost + len(id)) }

// putJudged keeps j unless it does not fit in the budget. With no transcript to hold events
// against, the oldest event makes room instead: it can never be reconciled anyway.
func (r *reconciler) putJudged(id string, j judgedCall) bool {
	r.dropJudged(id)
	n := j.size(id)
	for r.bytes+n > r.limit && !r.followed && len(r.judged) > 0 {
		r.dropJudged(oldestJudged(r.judged))
	}
	if r.bytes+n > r.limit {
		r.refused++
		return false
	}
	r.judged[id], r.bytes = j, r.bytes+n
	return true
}

func (r *reconciler) dropJudged(id string) {
	if j, ok := r.judged[id]; ok {
		r.bytes -= j.size(id)
		delete(r.judged, id)
	}
}

func oldestJudged(m map[string]judgedCall) string {
	var id string
	var at time.Time
	for k, j := range m {
		if id == "" || j.At.Before(at) {
			id, at = k, j.At
		}
	}
	return id
}

func (r *reconciler) putUse(id string, u use) bool {
	r.dropUse(id)
	if n := u.size(id); r.bytes+n <= r.limit {
		r.uses[id], r.bytes = u, r.bytes+n
		return true
	}
	r.refused++
	return false
}

func (r *reconciler) dropUse(id string) {
	if u, ok := r.uses[id]; ok {
		r.bytes -= u.size(id)
		delete(r.uses, id)
	}
}

func (r *reconciler) putPending(id string, at time.Time) {
	if _, ok := r.pending[id]; ok {
		return
	}
	if n := pendingSize(id); r.bytes+n <= r.limit {
		r.pending[id], r.bytes = at, r.bytes+n
		return
	}
	r.refused++
}

func (r *reconciler) dropPending(id string) {
	if _, ok := r.pending[id]; ok {
		r.bytes -= pendingSize(id)
		delete(r.pending, id)
	}
}

// noteJudged records that the event of a tool call reached the daemon and how it was decided.
func (r *reconciler) noteJudged(ev judgedEvent, now time.Time) {
	if ev.toolUseID == "" || len(ev.toolUseID) > 128 {
		return
	}
	if r.bytes > r.limit/2 { // a scan only when room runs short, not per event
		for id, j := range r.judged {
			if now.Sub(j.At) > judgedKeep {
				r.dropJudged(id) // a call whose result never came, an hour on
			}
		}
	}
	_, used := r.uses[ev.toolUseID]
	_, ran := r.pending[ev.toolUseID]
	j := judgedCall{Denied: ev.denied, At: now, Input: transcript.FingerprintOf(ev.input), Seen: used || ran}
	if !j.Seen {
		j.Tool, j.RID, j.Preview = cut(ev.tool), cut(ev.rid), transcript.Preview(ev.input)
	}
	r.putJudged(ev.toolUseID, j)
}

// cut bounds a string kept from the session.
func cut(s string) string { return s[:min(len(s), maxKept)] }

// judgedEvent is what reconciliation learns of one event judged.
type judgedEvent struct {
	toolUseID, tool, rid string
	denied               bool
	input                json.RawMessage
}

// finding is one thing reconciliation found, recorded as a record of rule.
type finding struct {
	rule string
	Code health.Code // typed, so that the log line's code is one the compiler knows
	use  use         // the call, for unguarded calls and forged events
	rid  string
	why  string
}

// reconcile reads what the session's transcripts added and reports unguarded calls, tampered
// transcripts and forged events. force skips the rate limit (housekeeping passes).
func (c *Collector) reconcile(s *session.Session, t *tracked, p *policy, force bool) {
	r := t.recon
	now := c.opts.Now()
	if r.follow == nil {
		r.follow = transcript.NewFollower(storePositions{c.opts.Offsets, offsetPrefix(t.dir) + "t:"}, transcriptMaxLine, r.since)
		r.restore(c.opts.Offsets.Note(offsetPrefix(t.dir) + "r"))
	}
	if wait := reconcileEvery - now.Sub(r.last); !force && wait > 0 && len(r.pending) == 0 {
		if !r.later {
			// A change in this window must still be read within seconds, not at the rescan.
			r.later = true
			time.AfterFunc(wait, func() { c.schedule(t, false) })
		}
		return
	}
	r.last, r.later = now, false
	var found []finding
	rep := r.follow.Follow(s, func(name string, line []byte) {
		items, version := transcript.ParseLine(line)
		if version != "" && !slices.Contains(r.versions, version) && len(r.versions) < maxVersions {
			r.versions = append(r.versions, version)
			c.opts.Health.CLIVersion(s.ID(), version)
		}
		for _, it := range items {
			found = append(found, r.take(it, now)...)
		}
	})
	r.followed = r.followed || rep.Files > 0
	if rep.Read > 0 {
		c.requestCommit() // positions kept as they go: a restart resumes, never starts over
	}
	if rep.More {
		time.AfterFunc(reconcileEvery, func() { c.schedule(t, false) })
	}
	c.watchTranscripts(t, rep.Dirs)
	removing := c.opts.Removals.Wait(s.Dir()) > 0
	for _, tm := range rep.Tampers {
		if removing && strings.Contains(tm.What, "removed") {
			continue // the session itself is going
		}
		found = append(found, finding{rule: RuleTranscriptTampered, Code: health.CodeTranscriptTampered, use: use{Tool: tm.File},
			why: tm.File + ": " + tm.What})
	}
	found = append(found, r.settle(now, c.opts.ReconcileGrace, c.opts.ForgedAfter)...)
	if len(r.pending) > 0 {
		// Events are drained before the transcript is read, so only one still on its way needs
		// the grace; look again once it has passed.
		time.AfterFunc(c.opts.ReconcileGrace, func() { c.schedule(t, false) })
	}
	r.limit = c.opts.SessionBytes - r.follow.Footprint()
	if rep.Over || r.refused > 0 {
		c.overBudget(t, now, fmt.Sprintf("transcripts %d (bound %d, %d bytes kept); calls awaiting a result %d, events awaiting their call %d, %d bytes of a budget of %d; %d refused",
			rep.Files, transcript.MaxFiles, r.follow.Footprint(), len(r.uses), len(r.judged), r.bytes, c.opts.SessionBytes, r.refused))
		r.refused = 0
	}
	c.persist(t)
	if len(found) > 0 {
		c.reportFindings(t, p, found, now)
	}
}

// settle decides the results that waited for their event, and the events that waited for their
// call to show in a transcript.
func (r *reconciler) settle(now time.Time, grace, forgedAfter time.Duration) []finding {
	var found []finding
	for id, since := range r.pending {
		j, ok := r.judged[id]
		switch {
		case ok && j.Denied:
			found = append(found, unguardedCall(r.takeUse(id), "it ran although coworkbridge denied it (the hook was killed, or its answer forged)"))
		case ok:
		case now.Sub(since) < grace:
			continue
		default:
			found = append(found, unguardedCall(r.takeUse(id), "it ran but its hook never reached coworkbridge (hooks switched off, or the hook bypassed)"))
		}
		r.dropPending(id)
		r.dropJudged(id)
	}
	if !r.followed {
		return found // no transcript to hold events against (not a CLI session, or not yet)
	}
	for id, j := range r.judged {
		if !j.Seen && now.Sub(j.At) >= forgedAfter {
			found = append(found, finding{rule: RuleForgedEvent, Code: health.CodeForgedEvent, rid: j.RID,
				use: use{ID: id, Tool: j.Tool, Preview: j.Preview},
				why: fmt.Sprintf("tool call %s: an event reached coworkbridge, but none of the session's transcripts shows the call within %v (written by something other than the CLI's hook)", id, forgedAfter)})
			r.dropJudged(id)
		}
	}
	return found
}

// quarantineReason says what a quarantine for a finding of rule is for.
func quarantineReason(rule string) string {
	switch rule {
	case RuleTranscriptTampered:
		return "a transcript of the session was tampered with"
	case RuleForgedEvent:
		return "an event no tool call caused reached coworkbridge"
	}
	return "a tool call ran without the guard"
}

func unguardedCall(u use, why string) finding {
	return finding{rule: RuleUnguarded, Code: health.CodeUnguardedCall, use: u, why: "tool call " + u.ID + ": " + why}
}

// take handles one transcript item.
func (r *reconciler) take(it transcript.Item, now time.Time) []finding {
	switch it.Kind {
	case transcript.Use:
		r.putUse(it.ToolUseID, use{ID: it.ToolUseID, Tool: cut(it.Tool), Preview: transcript.Preview(it.Input), Input: transcript.FingerprintOf(it.Input)})
		if j, ok := r.judged[it.ToolUseID]; ok && !j.Seen {
			j.Seen, j.Tool, j.RID, j.Preview = true, "", "", nil
			r.putJudged(it.ToolUseID, j) // smaller than before: always fits
		}
	case transcript.Result:
		j, ok := r.judged[it.ToolUseID]
		u, seen := r.uses[it.ToolUseID]
		if it.IsError {
			r.dropUse(it.ToolUseID)
			r.dropJudged(it.ToolUseID)
			return nil
		}
		switch {
		case ok && j.Denied:
			r.dropJudged(it.ToolUseID)
			return []finding{unguardedCall(r.takeUse(it.ToolUseID), "it ran although coworkbridge denied it (the hook was killed, or its answer forged)")}
		case ok && seen && !transcript.Same(j.Input, u.Input):
			r.dropJudged(it.ToolUseID)
			return []finding{unguardedCall(r.takeUse(it.ToolUseID), "it ran with an input other than the one coworkbridge judged (an event forged with its id, or the input rewritten after the judgement)")}
		case ok:
			r.dropUse(it.ToolUseID)
			r.dropJudged(it.ToolUseID)
			return nil
		}
		r.putPending(it.ToolUseID, now)
	}
	return nil
}

// takeUse returns and forgets the call of a tool-use id (with only its id when unseen).
func (r *reconciler) takeUse(id string) use {
	u, ok := r.uses[id]
	r.dropUse(id)
	if !ok {
		u = use{ID: id}
	}
	return u
}

// inFlight is what is persisted of a session's reconciliation: the calls between their event
// and their result, so that a daemon restarted meanwhile neither loses them nor takes their
// results for unguarded calls.
type inFlight struct {
	Judged map[string]judgedCall `json:"judged,omitempty"`
	Uses   map[string]use        `json:"uses,omitempty"`
}

// persist keeps the newest maxPersisted of each beside the transcript positions; Commit writes
// them with the offsets.
func (c *Collector) persist(t *tracked) {
	r := t.recon
	st := inFlight{Judged: newest(r.judged, func(j judgedCall) time.Time { return j.At }), Uses: newest(r.uses, func(use) time.Time { return time.Time{} })}
	data, err := json.Marshal(st)
	if err != nil || string(data) == r.saved {
		return
	}
	r.saved = string(data)
	if len(st.Judged)+len(st.Uses) == 0 {
		data = nil
	}
	c.opts.Offsets.SetNote(offsetPrefix(t.dir)+"r", data)
	c.requestCommit()
}

func newest[V any](m map[string]V, at func(V) time.Time) map[string]V {
	if len(m) <= maxPersisted {
		return m
	}
	ids := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return at(m[b]).Compare(at(m[a])) })
	out := make(map[string]V, maxPersisted)
	for _, id := range ids[:maxPersisted] {
		out[id] = m[id]
	}
	return out
}

// restore takes back what an earlier daemon persisted; a damaged note is ignored.
func (r *reconciler) restore(note json.RawMessage) {
	var st inFlight
	if len(note) == 0 || json.Unmarshal(note, &st) != nil {
		return
	}
	for id, j := range st.Judged {
		if len(r.judged) < maxPersisted && len(id) <= 128 {
			j.Tool, j.RID = cut(j.Tool), cut(j.RID)
			r.putJudged(id, j)
		}
	}
	for id, u := range st.Uses {
		if len(r.uses) < maxPersisted && len(id) <= 128 {
			u.Tool = cut(u.Tool)
			r.putUse(id, u)
		}
	}
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
func (c *Collector) overBudget(t *tracked, now time.Time, what string) {
	if now.Sub(t.recon.over) < time.Hour {
		return
	}
	t.recon.over = now
	c.log.Warn("a session went over what the daemon keeps for it; the excess is dropped", "code", health.CodeSessionOverBudget, "session", t.id, "what", what)
	c.opts.Health.Count(t.id, health.CodeSessionOverBudget)
}

// reportFindings records each finding, tells health, and in enforce quarantines.
func (c *Collector) reportFindings(t *tracked, p *policy, found []finding, now time.Time) {
	recs := make([]telemetry.Record, 0, len(found))
	for _, f := range found {
		input := f.use.Preview
		if len(input) == 0 {
			input = json.RawMessage("null")
		}
		recs = append(recs, telemetry.Record{TS: now, Session: t.id, RID: f.rid, Agent: "cowork", Transport: telemetry.TransportTranscript,
			Mode: string(p.cfg.Mode), Tool: f.use.Tool, Input: input, Decision: claudehook.Deny, Rule: f.rule, Reason: f.why})
		c.log.Warn("reconciliation found the guard bypassed or its evidence edited", "code", f.Code, "session", t.id, "rule", f.rule, "tool_use_id", f.use.ID, "tool", f.use.Tool, "why", f.why)
		c.opts.Health.Count(t.id, f.Code)
	}
	if err := c.opts.Sink.WriteBatch(recs); err != nil {
		c.opts.Health.Count("", health.CodeTelemetryFailed)
		c.log.Warn("cannot record reconciliation findings in the decision log", "code", health.CodeTelemetryFailed, "session", t.id, "err", err)
	}
	if p.cfg.Mode == managedconfig.Enforce {
		c.Quarantine(t.id, quarantineReason(found[0].rule)+" ("+found[0].why+")")
	}
}
