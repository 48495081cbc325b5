package lane

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/ledger"
	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Rule ids for the events coworkbridge refuses before any rule sees them.
const (
	RuleMalformed       = "coworkbridge.malformed"
	RuleOversized       = "coworkbridge.oversized"
	RuleClassifierError = "coworkbridge.classifier-error"
	RuleQuarantine      = decisions.RuleQuarantine
	RuleDuplicateRID    = "coworkbridge.duplicate-rid"
)

// outcome is one line's result, counted once its record is in the decision log.
type outcome struct {
	rec  telemetry.Record
	skip bool // already recorded before a crash
	bad  string
	// latency: from the batch's start to the decision file, when one was written.
	latency time.Duration
	// backlog: the event was waiting before the daemon followed the session (it was down), so it
	// is caught up, not counted against the session's budget.
	backlog bool
	// toolUseID is the call's id: a record over the budget waits for the transcript to show it.
	toolUseID string
	// held: a no objection for a hook in the host channel, not yet published. It is answered
	// once the record is written, with the event file itself (see channelBatch).
	held bool
}

// source is where a batch of events came from, which says how their hooks are answered: the
// session's spool, whose hooks run in the VM beside the agent, or the session's host channel,
// where hooks on the Mac hand their events over out of the agent's reach.
type source struct {
	s *session.Session
	// transport is what the records say (telemetry.Transport*).
	transport string
}

func (src source) channel() bool { return src.transport == telemetry.TransportChannel }

// judge decides one line and, when a hook waits for it, answers at once: the decision file is the
// latency-critical step, the log and counts come after.
func (l *Lane) judge(ctx context.Context, src source, p *Policy, line spool.Line, started time.Time) outcome {
	rec := telemetry.Record{TS: l.env.Now(), Session: l.id, Agent: "cowork", Transport: src.transport,
		Mode: string(p.Cfg.Mode), Input: json.RawMessage("null")}
	if line.Oversized {
		rid, waiting := waitingHook(line.Head)
		reason := fmt.Sprintf("this tool call was blocked because its data (%d bytes) exceeds max_line_bytes (%d); ask your IT team to raise the limit if such calls are expected", line.Size, p.Cfg.MaxLineBytes)
		return l.fault(src, p, rec, rid, waiting, RuleOversized, reason, started)
	}
	env, err := claudehook.ParseEnvelope(line.Data)
	if err != nil {
		rid, waiting := waitingHook(line.Data[:min(len(line.Data), 256)])
		return l.fault(src, p, rec, rid, waiting, RuleMalformed, "this tool call was blocked because coworkbridge could not read it (malformed event)", started)
	}
	if env.RID != "" && l.env.Replays.Take(env.RID) {
		if pl, err := claudehook.ParsePayload(env.Event); err == nil {
			// Judged before a crash: its call is still one the transcript will show.
			l.recon.calls.Judged(ledger.Event{ToolUseID: pl.ToolUseID, Tool: pl.ToolName, RID: env.RID, Input: pl.ToolInput}, l.env.Now())
		}
		return outcome{skip: true}
	}
	if env.RID != "" && l.rids.Has(env.RID) {
		// Spool lines are self-reported: a second line with a request id already handled was
		// not written by the hook that made the id. Its hook, if any, has had its answer.
		l.Quarantine("a second spool line reused request id " + env.RID + " (a forged line)")
		return l.fault(src, p, rec, env.RID, false, RuleDuplicateRID, "a second spool line with request id "+env.RID+": not written by its hook", started)
	}
	waiting := env.Mode == string(managedconfig.Enforce) && env.RID != ""
	pl, err := claudehook.ParsePayload(env.Event)
	if err != nil {
		return l.fault(src, p, rec, env.RID, waiting, RuleMalformed, "this tool call was blocked because coworkbridge could not read it ("+err.Error()+")", started)
	}
	v := evaluate(ctx, p.Cls, pl, l.dir, func() realpath.Identities { return l.identities(p) })
	facets := v.Flow
	call := cmp.Or(pl.ToolUseID, env.RID)
	v, flowed := l.judgeFlow(p, v, facets, call, pl.ToolName)
	if why := l.quarantined(); why != "" {
		v = classifier.Verdict{Decision: claudehook.Deny, RuleID: RuleQuarantine,
			Reason: decisions.QuarantineReason(why)}
	}
	rec.RID, rec.Tool, rec.Input, rec.Cwd = env.RID, pl.ToolName, pl.ToolInput, pl.Cwd
	rec.ToolUseID, rec.CLISessionID, rec.PromptID, rec.CLIVersion = pl.ToolUseID, pl.SessionID, pl.PromptID, l.recon.cliVersion()
	if len(rec.Input) == 0 {
		rec.Input = json.RawMessage("null")
	}
	rec.Decision, rec.Rule, rec.Reason, rec.Flow = v.Decision, v.RuleID, v.Reason, flowed
	if v.Decision != claudehook.Allow { // what check shows, kept for whoever reads the record
		rec.Matched, rec.Nudge, rec.Effects = v.Matched, v.Nudge, p.Cls.Effects(pl)
	}
	enforce := p.Cfg.Mode == managedconfig.Enforce && !v.ObserveOnly
	applied := v.Decision
	if !enforce {
		applied = claudehook.Allow
	}
	if applied != claudehook.Deny { // a call refused took nothing in and read nothing
		l.takeFlow(facets, call, pl.ToolName)
	}
	l.recon.calls.Judged(ledger.Event{ToolUseID: pl.ToolUseID, Tool: pl.ToolName, RID: env.RID, Denied: enforce && v.Decision == claudehook.Deny, Input: pl.ToolInput}, l.env.Now())
	o := outcome{rec: rec, toolUseID: pl.ToolUseID}
	if waiting {
		o.rec.Enforced = enforce
		// A hook still in enforce after a switch to observe is released with no objection.
		reason := l.explain(p, env.RID, applied, v.RuleID, v.HookReason())
		if o.held = l.holdable(src, env.RID, applied, reason, v.Nudge); !o.held {
			o.latency = l.decide(src, env.RID, applied, reason, v.Nudge, started, line.Data)
			o.rec.LatencyUS = o.latency.Microseconds()
		}
	}
	return o
}

// holdable reports whether the answer to rid may wait for its record: a no objection to a hook in
// the host channel, not published yet. The event file there is the event's only copy until the
// record is written, and then becomes the answer, so that no file is made for it.
func (l *Lane) holdable(src source, rid string, d claudehook.Decision, reason, context string) bool {
	_, done := l.decided[rid]
	return src.channel() && !done && len(claudehook.Output(d, reason, context)) == 0
}

// fault handles a line no rule can judge: in enforce mode its waiting hook is denied at once
// rather than left to time out.
func (l *Lane) fault(src source, p *Policy, rec telemetry.Record, rid string, waiting bool, rule, reason string, started time.Time) outcome {
	if rid != "" && l.env.Replays.Take(rid) {
		return outcome{skip: true}
	}
	rec.RID, rec.Decision, rec.Rule, rec.Reason = rid, claudehook.Deny, rule, reason
	o := outcome{rec: rec, bad: rule}
	if waiting && rid != "" {
		d := claudehook.Allow
		if p.Cfg.Mode == managedconfig.Enforce {
			d = claudehook.Deny
			o.rec.Enforced = true
		}
		o.latency = l.decide(src, rid, d, l.explain(p, rid, d, rule, "coworkbridge: "+reason), "", started, nil)
		o.rec.LatencyUS = o.latency.Microseconds()
	}
	return o
}

// explain is what the hook is told for decision d: for a deny or an ask, the admin's notice
// for rule around coworkbridge's reason.
func (l *Lane) explain(p *Policy, rid string, d claudehook.Decision, rule, reason string) string {
	if d == claudehook.Allow {
		return reason
	}
	return p.Cfg.Policy.Notices.Explain(reason, managedconfig.NoticeFacts{Rule: rule, RID: rid, Decision: string(d),
		Session: l.id, User: l.env.User, Host: l.env.Host})
}

// decide writes the decision file once per request, and returns how long it took to get there.
// line is the event as the spool gave it, for a hook in the VM whose staged copy of it may become
// the decision (decisions.WriteStaged); nil where there is none to look for.
func (l *Lane) decide(src source, rid string, d claudehook.Decision, reason, context string, started time.Time, line []byte) time.Duration {
	if _, done := l.decided[rid]; done {
		return 0 // written on an earlier attempt whose log write failed
	}
	if src.channel() {
		line = nil // its hooks write their event in place, and stage nothing
	} else {
		l.plants.Ours(rid, l.env.Now()) // before the write, so that its watch event never finds it unknown
	}
	err := decisions.WriteStaged(src.s, rid, d, reason, context, line)
	if errors.Is(err, decisions.ErrSwapped) {
		// Answered all the same; what was swapped in may have been read first.
		l.plants.Suspect(plants.Suspect{RID: rid, Rule: RuleForgedDecision,
			What: "a file was swapped in for the hook's copy of request " + rid + " as it became the answer (a forged answer)"})
		l.again(Again{})
		err = nil
	}
	if err != nil {
		l.env.Log.Warn("cannot write a decision; the hook will deny when it times out", "code", health.CodeDecisionFailed, "session", l.id, "rid", rid, "err", err)
		l.env.Health.Count(l.id, health.CodeDecisionFailed)
		return 0
	}
	l.decided[rid] = l.env.Now()
	return time.Since(started)
}

// count reports a recorded outcome to health.
func (l *Lane) count(o outcome) {
	delete(l.decided, o.rec.RID)
	switch o.bad {
	case RuleMalformed:
		l.env.Health.Count(l.id, health.CodeMalformedLines)
	case RuleOversized:
		l.env.Health.Count(l.id, health.CodeOversizedLines)
	}
	d := health.Decision(o.rec.Decision)
	if !o.rec.Enforced && d == health.Deny {
		d = health.WouldDeny
	} else if !o.rec.Enforced && d == health.Ask {
		d = health.WouldAsk
	}
	l.env.Health.Event(l.id, d, o.latency)
}

// classifyBudget bounds one evaluation. The analysis limits keep ordinary and hostile commands
// far below it; reaching it means something unforeseen, and the line is denied and committed
// like any other, so that a restart does not meet it again.
const classifyBudget = 2 * time.Second

// evaluate runs the classifier on a call from the session in folder own, also where the Mac's
// links take its paths (a host-loop file tool follows them); a panic in it is a deny, never a
// crash or an allow.
func evaluate(ctx context.Context, cls *classifier.Classifier, p claudehook.Payload, own string, ids func() realpath.Identities) (v classifier.Verdict) {
	ctx, cancel := context.WithTimeout(ctx, classifyBudget)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			v = classifier.Verdict{Decision: claudehook.Deny, RuleID: RuleClassifierError,
				Reason: fmt.Sprintf("this tool call was blocked because the policy engine failed on it (%v)", r)}
		}
	}()
	return cls.EvaluateResolved(ctx, p, own, func(p claudehook.Payload) (claudehook.Payload, bool) {
		return realpath.Resolve(p, filepath.EvalSymlinks, ids)
	})
}

// identitiesFor is how long the identities of the protected places are trusted: a place made,
// or a log rotated, since is known by its identity within that time.
const identitiesFor = 10 * time.Second

// identities are the protected places of p by identity, taken again when the policy changed or
// they are older than identitiesFor.
func (l *Lane) identities(p *Policy) realpath.Identities {
	now := l.env.Now()
	if l.ids.pol != p || now.Sub(l.ids.at) > identitiesFor || now.Before(l.ids.at) {
		l.ids.pol, l.ids.at, l.ids.of = p, now, realpath.Of(p.Cls.PlacePaths())
	}
	return l.ids.of
}

// waitingHook recovers the request id from the start of a damaged line, and whether the hook that
// wrote it waits for an answer: the enforce hook writes {"v":1,"rid":"<32 hex>","mode":"enforce".
func waitingHook(head []byte) (rid string, waiting bool) {
	rid, ok := claudehook.RecoverRID(head)
	if !ok {
		return "", false
	}
	rest := head[len(`{"v":1,"rid":"`)+32+1:]
	return rid, bytes.HasPrefix(rest, []byte(`,"mode":"enforce"`))
}

// judgeFlow judges a call that sends by what the session took in and read before it (the flow
// rules, classifier.TargetFlow); the stricter of that and v stands. flowed names the calls of a
// flow a rule found, for the record.
func (l *Lane) judgeFlow(p *Policy, v classifier.Verdict, f classifier.Facets, call, tool string) (classifier.Verdict, []string) {
	return p.Cls.WithFlow(v, l.FlowNow(), f, call, tool)
}

// FlowNow is the session's flow now. Safe at any time: a system-mode daemon judging a host call
// of the session asks it outside the pass.
func (l *Lane) FlowNow() flow.State {
	l.flowMu.Lock()
	defer l.flowMu.Unlock()
	l.loadFlowLocked()
	return l.flow
}

// takeFlow notes what a call let run took in and read, and keeps the flow beside the offsets.
func (l *Lane) takeFlow(f classifier.Facets, call, tool string) {
	if f.Untrusted == "" && f.Private == "" {
		return
	}
	l.flowMu.Lock()
	l.loadFlowLocked()
	l.flow.Take(f.Untrusted, f.Private, call, tool, l.env.Now())
	note := l.flow.Marshal()
	l.flowMu.Unlock()
	l.env.Offsets.SetNote(flow.NoteKey(l.dir), note)
	l.res.Commit = true
}

func (l *Lane) loadFlowLocked() {
	if !l.flowReady {
		l.flow, l.flowReady = flow.Restore(l.env.Offsets.Note(flow.NoteKey(l.dir))), true
	}
}
