// Package ledger is one session's account of its tool calls for reconciliation: the events the
// daemon judged and the calls the CLI's transcripts show, matched by tool-use id and by a
// fingerprint of the input, within a budget of bytes. It says which calls ran unguarded (with no
// event, despite an enforced deny, or with another input than the one judged) and which events
// no call caused (forged).
//
// It keeps ids, hashes and short previews, never inputs, and reads no file: the collector feeds
// it the events it judges and the items the transcript follower reads, records its findings and
// persists its state. Its state is reachable only through its methods, so that who owns what is
// the compiler's business: a Ledger belongs to its session's worker.
package ledger

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
)

const (
	// judgedKeep is how long an event waits for its call's result before it may make room.
	judgedKeep = time.Hour
	// maxPersisted bounds each kind of entry persisted.
	maxPersisted = 256
	// maxKept bounds a tool name or request id kept (they come from the session).
	maxKept = 256
	// maxID bounds a tool-use id: longer ones are not the CLI's.
	maxID = 128
	// entryCost is the allowance for a map entry's own cost, beside the strings it holds.
	entryCost = 96
)

// Ledger is one session's calls between their event and their result.
type Ledger struct {
	judged  map[string]judged    // by tool_use_id, until the call's result
	uses    map[string]Use       // calls seen in the transcripts, awaiting a result
	pending map[string]time.Time // results that ran with no event yet, since when
	failed  map[string]bool      // of pending, the results marked as errors
	// followed: the session has transcripts, so every event must name a call they show.
	followed bool
	// bytes is what the maps hold (see the sizes below), limit what they may, refused how many
	// entries did not fit since Refused was last asked.
	bytes, limit int64
	refused      int
}

// New returns an empty ledger that may keep limit bytes.
func New(limit int64) *Ledger {
	return &Ledger{judged: map[string]judged{}, uses: map[string]Use{}, pending: map[string]time.Time{}, failed: map[string]bool{}, limit: limit}
}

type judged struct {
	Denied bool `json:"denied,omitempty"` // an enforced deny
	// Spool: the event came through the session's spool, which the agent can write.
	Spool bool                   `json:"spool,omitempty"`
	At    time.Time              `json:"at"`
	Input transcript.Fingerprint `json:"input"`
	// Seen: a transcript shows the call. Until then the event's tool, preview and request id
	// are kept for the forged-event finding.
	Seen    bool            `json:"seen,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	RID     string          `json:"rid,omitempty"`
	Preview json.RawMessage `json:"preview,omitempty"`
}

// Use is what is kept of a call the transcript shows, until its result: never its whole input,
// which can hold a whole file (a session writing huge inputs must not grow the daemon).
type Use struct {
	ID      string                 `json:"id"`
	Tool    string                 `json:"tool"`
	Preview json.RawMessage        `json:"preview"` // transcript.Preview of the input
	Input   transcript.Fingerprint `json:"input"`
}

// Event is what the ledger learns of one event judged.
type Event struct {
	ToolUseID, Tool, RID string
	// Denied: an enforced deny.
	Denied bool
	Input  json.RawMessage
	// Cwd is the folder of the call (the payload's), against which a relative path is taken.
	Cwd string
	// Fingerprint stands for Input when only the fingerprint came (a host hook's receipt).
	Fingerprint transcript.Fingerprint
	// SelfReported: the event came through the session's spool, which the agent can write as
	// well as its CLI's hook; only a transcript confirms that the CLI made the call.
	SelfReported bool
}

// Finding is one thing the ledger found.
type Finding struct {
	Rule string
	Code health.Code // typed, so that the log line's code is one the compiler knows
	Use  Use         // the call: its id, tool and input preview
	RID  string
	Why  string
	// Count is how many events the finding stands for, when more than one.
	Count int
}

// Sizes of what a ledger keeps, as bytes of the daemon's memory: the strings and maps held.
func (j judged) size(id string) int64 {
	return int64(entryCost+len(id)+len(j.Tool)+len(j.RID)+len(j.Preview)) + j.Input.Size()
}

func (u Use) size(id string) int64 {
	return int64(entryCost+len(id)+len(u.ID)+len(u.Tool)+len(u.Preview)) + u.Input.Size()
}

func pendingSize(id string) int64 { return int64(entryCost + len(id)) }

// cut bounds a string kept from the session.
func cut(s string) string { return s[:min(len(s), maxKept)] }

// SetLimit changes what the ledger may keep (the session's budget less what else it keeps).
func (l *Ledger) SetLimit(limit int64) { l.limit = limit }

// SetFollowed says the session has transcripts: from then on an event no transcript shows is
// a forgery.
func (l *Ledger) SetFollowed() { l.followed = true }

// Refused returns how many entries did not fit since it was last asked.
func (l *Ledger) Refused() int {
	n := l.refused
	l.refused = 0
	return n
}

// Stats are the ledger's figures, for a report of a session over its budget.
type Stats struct {
	Judged, Uses, Pending int
	Bytes                 int64
}

// Stats returns the ledger's figures.
func (l *Ledger) Stats() Stats {
	return Stats{Judged: len(l.judged), Uses: len(l.uses), Pending: len(l.pending), Bytes: l.bytes}
}

// Pending reports results waiting for their event: the caller looks again after the grace.
func (l *Ledger) Pending() bool { return len(l.pending) > 0 }

// putJudged keeps j unless it does not fit. With no transcript to hold events against, the
// oldest event makes room instead: it can never be reconciled anyway.
func (l *Ledger) putJudged(id string, j judged) {
	l.dropJudged(id)
	n := j.size(id)
	for l.bytes+n > l.limit && !l.followed && len(l.judged) > 0 {
		l.dropJudged(oldest(l.judged))
	}
	if l.bytes+n > l.limit {
		l.refused++
		return
	}
	l.judged[id], l.bytes = j, l.bytes+n
}

func (l *Ledger) dropJudged(id string) {
	if j, ok := l.judged[id]; ok {
		l.bytes -= j.size(id)
		delete(l.judged, id)
	}
}

func oldest(m map[string]judged) string {
	var id string
	var at time.Time
	for k, j := range m {
		if id == "" || j.At.Before(at) {
			id, at = k, j.At
		}
	}
	return id
}

func (l *Ledger) putUse(id string, u Use) {
	l.dropUse(id)
	if n := u.size(id); l.bytes+n <= l.limit {
		l.uses[id], l.bytes = u, l.bytes+n
		return
	}
	l.refused++
}

func (l *Ledger) dropUse(id string) {
	if u, ok := l.uses[id]; ok {
		l.bytes -= u.size(id)
		delete(l.uses, id)
	}
}

func (l *Ledger) putPending(id string, at time.Time) {
	if _, ok := l.pending[id]; ok {
		return
	}
	if n := pendingSize(id); l.bytes+n <= l.limit {
		l.pending[id], l.bytes = at, l.bytes+n
		return
	}
	l.refused++
}

func (l *Ledger) dropPending(id string) {
	if _, ok := l.pending[id]; ok {
		l.bytes -= pendingSize(id)
		delete(l.pending, id)
		delete(l.failed, id)
	}
}

// Judged records that the event of a tool call reached the daemon and how it was decided.
func (l *Ledger) Judged(ev Event, now time.Time) {
	if ev.ToolUseID == "" || len(ev.ToolUseID) > maxID {
		return
	}
	if l.bytes > l.limit/2 { // a scan only when room runs short, not per event
		for id, j := range l.judged {
			if now.Sub(j.At) > judgedKeep {
				l.dropJudged(id) // a call whose result never came, an hour on
			}
		}
	}
	_, used := l.uses[ev.ToolUseID]
	_, ran := l.pending[ev.ToolUseID]
	fp := ev.Fingerprint
	if fp == nil {
		fp = transcript.FingerprintIn(ev.Input, ev.Cwd)
	}
	j := judged{Denied: ev.Denied, Spool: ev.SelfReported, At: now, Input: fp, Seen: used || ran}
	if !j.Seen {
		j.Tool, j.RID, j.Preview = cut(ev.Tool), cut(ev.RID), preview(ev.Input)
	}
	l.putJudged(ev.ToolUseID, j)
}

// Take handles one transcript item: a call shown, or its result.
func (l *Ledger) Take(it transcript.Item, now time.Time) []Finding {
	switch it.Kind {
	case transcript.Use:
		l.putUse(it.ToolUseID, Use{ID: it.ToolUseID, Tool: cut(it.Tool), Preview: preview(it.Input), Input: transcript.FingerprintIn(it.Input, it.Cwd)})
		if j, ok := l.judged[it.ToolUseID]; ok && !j.Seen {
			j.Seen, j.Tool, j.RID, j.Preview = true, "", "", nil
			l.putJudged(it.ToolUseID, j) // smaller than before: always fits
		}
	case transcript.Result:
		j, ok := l.judged[it.ToolUseID]
		u, seen := l.uses[it.ToolUseID]
		if it.IsError && (ok || it.NeverRan) {
			// Refused or failed after the hook judged it, or stopped before any hook: did not run
			// unguarded.
			l.dropUse(it.ToolUseID)
			l.dropJudged(it.ToolUseID)
			return nil
		}
		switch {
		case ok && j.Denied:
			l.dropJudged(it.ToolUseID)
			return []Finding{unguarded(l.takeUse(it.ToolUseID), whyDenied)}
		case ok && seen && !transcript.Same(j.Input, u.Input):
			l.dropJudged(it.ToolUseID)
			return []Finding{unguarded(l.takeUse(it.ToolUseID), whyOtherInput)}
		case ok:
			l.dropUse(it.ToolUseID)
			l.dropJudged(it.ToolUseID)
			return nil
		}
		l.putPending(it.ToolUseID, now)
		if it.IsError {
			// No judgement, and an error: a call that ran and failed, or a result rewritten
			// after the call ran (an agent hiding it). Hooks run before the CLI's own refusals,
			// so a refusal with no judgement was made with the hook switched off.
			l.failed[it.ToolUseID] = true
		}
	}
	return nil
}

// Why an unguarded call ran, whichever of its judgement and its result came first.
const (
	whyDenied     = "it ran although coworkbridge denied it (the hook was killed, or its answer forged)"
	whyOtherInput = "it ran with an input other than the one coworkbridge judged (an event forged with its id, or the input rewritten after the judgement)"
)

// Settle decides the results that waited for their event (grace), and the events that waited
// for their call to show in a transcript (forgedAfter).
func (l *Ledger) Settle(now time.Time, grace, forgedAfter time.Duration) []Finding {
	var found []Finding
	for id, since := range l.pending {
		j, ok := l.judged[id]
		u, seen := l.uses[id]
		switch {
		case ok && j.Denied && !l.failed[id]:
			found = append(found, unguarded(l.takeUse(id), whyDenied))
		case ok && !l.failed[id] && seen && !transcript.Same(j.Input, u.Input):
			// A judgement that reached the daemon after the result is held to the input that ran
			// as one before it is: which came first is the daemon's timing, not the agent's proof.
			found = append(found, unguarded(l.takeUse(id), whyOtherInput))
		case ok: // judged after all: an error result is the refusal or a failure, not a call unguarded
			l.dropUse(id)
		case now.Sub(since) < grace:
			continue
		case l.failed[id]:
			found = append(found, unguarded(l.takeUse(id), "its hook never reached coworkbridge and its result is an error: it ran and failed, was refused with the hook switched off, or its result was rewritten to hide it"))
		default:
			found = append(found, unguarded(l.takeUse(id), "it ran but its hook never reached coworkbridge (hooks switched off, or the hook bypassed)"))
		}
		l.dropPending(id)
		l.dropJudged(id)
	}
	if !l.followed {
		// No transcript to hold events against (not a CLI session, one whose CLI keeps none, or
		// not yet): what the spool alone says stays unconfirmed.
		return append(found, l.unconfirmed(now, forgedAfter)...)
	}
	for id, j := range l.judged {
		if !j.Seen && now.Sub(j.At) >= forgedAfter {
			found = append(found, Finding{Rule: ruleid.ForgedEvent, Code: health.CodeForgedEvent, RID: j.RID,
				Use: Use{ID: id, Tool: j.Tool, Preview: j.Preview},
				Why: fmt.Sprintf("tool call %s: an event reached coworkbridge, but none of the session's transcripts shows the call within %v (written by something other than the CLI's hook)", id, forgedAfter)})
			l.dropJudged(id)
		}
	}
	return found
}

// maxUnconfirmed bounds the unconfirmed events reported one by one in a settling; the rest are
// reported together, so that forged lines cannot make the daemon write more than they wrote.
const maxUnconfirmed = 32

// unconfirmed reports the spool's events that no transcript confirmed within forgedAfter, in a
// session with none: each a finding (up to maxUnconfirmed, then one for the rest).
func (l *Ledger) unconfirmed(now time.Time, forgedAfter time.Duration) []Finding {
	var found []Finding
	more, last := 0, ""
	for id, j := range l.judged {
		if !j.Spool || j.Seen || now.Sub(j.At) < forgedAfter {
			continue
		}
		l.dropJudged(id)
		if len(found) == maxUnconfirmed {
			more, last = more+1, id
			continue
		}
		found = append(found, Finding{Rule: ruleid.Unconfirmed, Code: health.CodeUnconfirmedEvent, RID: j.RID,
			Use: Use{ID: id, Tool: j.Tool, Preview: j.Preview},
			Why: fmt.Sprintf("tool call %s: only the session's spool says it was made, and no transcript of the session confirmed it within %v (the CLI keeps none here, or something other than its hook wrote the line)", id, forgedAfter)})
	}
	if more > 0 {
		found = append(found, Finding{Rule: ruleid.Unconfirmed, Code: health.CodeUnconfirmedEvent, Count: more,
			Why: fmt.Sprintf("%d more events of the session's spool, up to tool call %s, were not confirmed by any transcript within %v", more, last, forgedAfter)})
	}
	return found
}

// preview is what the ledger keeps of an input for its findings: redacted as the decision log
// would be, since the ledger's state is persisted (offsets.json), then cut short.
func preview(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return transcript.Preview(telemetry.RedactedInput(raw))
}

func unguarded(u Use, why string) Finding {
	return Finding{Rule: ruleid.Unguarded, Code: health.CodeUnguardedCall, Use: u, Why: "tool call " + u.ID + ": " + why}
}

// takeUse returns and forgets the call of a tool-use id (with only its id when unseen).
func (l *Ledger) takeUse(id string) Use {
	u, ok := l.uses[id]
	l.dropUse(id)
	if !ok {
		u = Use{ID: id}
	}
	return u
}

// inFlight is what is persisted of a ledger: the calls between their event and their result,
// so that a daemon restarted meanwhile neither loses them nor takes their results for unguarded
// calls.
type inFlight struct {
	Judged map[string]judged `json:"judged,omitempty"`
	Uses   map[string]Use    `json:"uses,omitempty"`
}

// Persisted is the newest maxPersisted of each kind of entry, encoded; nil when there is none.
func (l *Ledger) Persisted() []byte {
	st := inFlight{Judged: newest(l.judged, func(j judged) time.Time { return j.At }), Uses: newest(l.uses, func(Use) time.Time { return time.Time{} })}
	if len(st.Judged)+len(st.Uses) == 0 {
		return nil
	}
	data, err := json.Marshal(st)
	if err != nil {
		return nil
	}
	return data
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

// Restore takes back what an earlier daemon persisted; a damaged note is ignored.
func (l *Ledger) Restore(note []byte) {
	var st inFlight
	if len(note) == 0 || json.Unmarshal(note, &st) != nil {
		return
	}
	for id, j := range st.Judged {
		if len(l.judged) < maxPersisted && len(id) <= maxID {
			j.Tool, j.RID = cut(j.Tool), cut(j.RID)
			l.putJudged(id, j)
		}
	}
	for id, u := range st.Uses {
		if len(l.uses) < maxPersisted && len(id) <= maxID {
			u.Tool = cut(u.Tool)
			l.putUse(id, u)
		}
	}
}
