package lane

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/ledger"
	"github.com/coworkbridge/coworkbridge/collector/internal/plants"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/runfile"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
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
	// notable: the record matters as evidence (judgement.Outcome.Notable); a budget logs it
	// line by line past the routine allowance.
	notable bool
	// held: a no objection for a hook in the host channel, not yet published. It is answered
	// once the record is written, with the event file itself (see channelBatch).
	held bool
}

// source is where a batch of events came from, which says how their hooks are answered: the
// session's spool (judgement.Spool), whose hooks run in the VM beside the agent, or the session's
// host channel (judgement.Channel), where hooks on the Mac hand their events over out of the
// agent's reach.
type source struct {
	s    *session.Session
	door judgement.Door
}

func (src source) channel() bool { return src.door == judgement.Channel }

// call is what the judgement needs of a line of the lane's session, besides its payload.
func (l *Lane) call(src source, rid string, waiting bool) judgement.Call {
	return judgement.Call{Door: src.door, RID: rid, Session: l.id, Own: l.dir, Waiting: waiting,
		User: l.env.User, Host: l.env.Host, CLIVersion: l.recon.cliVersion()}
}

// judge decides one line and, when a hook waits for it, answers at once: the decision file is the
// latency-critical step, the log and counts come after.
func (l *Lane) judge(ctx context.Context, src source, p *Policy, line spool.Line, started time.Time) outcome {
	if line.Oversized {
		rid, waiting := waitingHook(line.Head)
		reason := fmt.Sprintf("this tool call was blocked because its data (%d bytes) exceeds max_line_bytes (%d); ask your IT team to raise the limit if such calls are expected", line.Size, p.Cfg.MaxLineBytes)
		return l.fault(src, p, rid, waiting, ruleid.Oversized, reason, started)
	}
	env, err := claudehook.ParseEnvelope(line.Data)
	if err != nil {
		rid, waiting := waitingHook(line.Data[:min(len(line.Data), 256)])
		return l.fault(src, p, rid, waiting, ruleid.Malformed, "this tool call was blocked because coworkbridge could not read it (malformed event)", started)
	}
	if env.RID != "" && l.env.Replays.Take(env.RID) {
		if pl, err := claudehook.ParsePayload(env.Event); err == nil {
			// Judged before a crash: its call is still one the transcript will show.
			l.recon.calls.Judged(ledger.Event{ToolUseID: pl.ToolUseID, Tool: pl.ToolName, RID: env.RID, Input: pl.ToolInput, Cwd: pl.Cwd,
				SelfReported: src.door == judgement.Spool}, l.env.Now())
		}
		return outcome{skip: true}
	}
	if env.RID != "" && l.rids.Has(env.RID) {
		// Spool lines are self-reported: a second line with a request id already handled was
		// not written by the hook that made the id. Its hook, if any, has had its answer.
		l.Quarantine("a second spool line reused request id " + env.RID + " (a forged line)")
		return l.fault(src, p, env.RID, false, ruleid.DuplicateRID, "a second spool line with request id "+env.RID+": not written by its hook", started)
	}
	waiting := env.Mode == string(managedconfig.Enforce) && env.RID != ""
	pl, err := claudehook.ParsePayload(env.Event)
	if err != nil {
		return l.fault(src, p, env.RID, waiting, ruleid.Malformed, "this tool call was blocked because coworkbridge could not read it ("+err.Error()+")", started)
	}
	if src.channel() {
		l.tier.hostCall(pl.ToolUseID, pl.ToolName, l.env.Now())
	}
	c := l.call(src, env.RID, waiting)
	c.Payload, c.Flow, c.Quarantined, c.Learn = pl, l.FlowNow(), l.quarantined(), l.learnPending(p)
	if c.InVM() {
		c.Read = runfile.Reader{Session: src.s.Dir(), VM: true}.Read
	} else {
		c.Read, c.Home = runfile.Reader{Home: l.env.Home}.Read, l.env.Home
	}
	j := p.Rules.Decide(ctx, c)
	if j.Ran() {
		l.takeFlow(j.Facets, cmp.Or(pl.ToolUseID, env.RID), pl.ToolName)
	}
	l.recon.calls.Judged(ledger.Event{ToolUseID: pl.ToolUseID, Tool: pl.ToolName, RID: env.RID, Denied: !j.Ran(), Input: pl.ToolInput, Cwd: pl.Cwd,
		SelfReported: src.door == judgement.Spool}, l.env.Now())
	o := outcome{rec: j.Record, toolUseID: pl.ToolUseID, notable: j.Notable}
	if waiting {
		// A hook still in enforce after a switch to observe is released with no objection.
		if o.held = l.holdable(src, env.RID, j.Applied, j.Shown, j.Verdict.Nudge); !o.held {
			o.latency = l.decide(src, env.RID, j.Applied, j.Shown, j.Verdict.Nudge, started, line.Data)
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
func (l *Lane) fault(src source, p *Policy, rid string, waiting bool, rule, reason string, started time.Time) outcome {
	if rid != "" && l.env.Replays.Take(rid) {
		return outcome{skip: true}
	}
	waiting = waiting && rid != ""
	j := p.Rules.Refuse(l.call(src, rid, waiting), rule, reason)
	o := outcome{rec: j.Record, bad: rule}
	if waiting {
		o.latency = l.decide(src, rid, j.Applied, j.Shown, "", started, nil)
		o.rec.LatencyUS = o.latency.Microseconds()
	}
	return o
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
		l.plants.Suspect(plants.Suspect{RID: rid, Rule: ruleid.ForgedDecision,
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
	case ruleid.Malformed:
		l.env.Health.Count(l.id, health.CodeMalformedLines)
	case ruleid.Oversized:
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

// learnFlow takes in what the session's latest private read showed the model, from its result
// in a transcript, so that a send is judged by whether it carries that (flow.State.Learn).
// A read that failed read nothing: it is seen, holding nothing.
func (l *Lane) learnFlow(it transcript.Item) {
	if it.Kind != transcript.Result {
		return
	}
	text := ""
	if !it.IsError {
		text = it.Text()
	}
	l.flowMu.Lock()
	l.loadFlowLocked()
	var note []byte
	learnt := l.flow.Private != nil && l.flow.Private.Call == it.ToolUseID && l.flow.Learn(it.ToolUseID, text)
	if learnt {
		note = l.flow.Marshal()
	}
	l.flowMu.Unlock()
	if learnt {
		l.env.Offsets.SetNote(flow.NoteKey(l.dir), note)
		l.res.Commit = true
	}
}

// learnPending is a judgement's Learn (see judgement.Call): it reads the session's transcripts
// until the latest private read's result is there, for at most learnWait. The CLI writes that
// result while the next call's hooks run, so a send judged at once would find it missing and
// be judged by its shape alone.
func (l *Lane) learnPending(p *Policy) func(flow.State) flow.State {
	return func(st flow.State) flow.State {
		if l.open == nil {
			return st
		}
		deadline := l.env.Now().Add(learnWait)
		for tries := 1; ; tries++ {
			l.reconcile(l.open, p, true)
			// The lane's clock may be a test's that stands still: the tries bound the wait too.
			if cur := l.FlowNow(); cur.Knows() || !l.env.Now().Before(deadline) || tries > int(learnWait/learnPoll) {
				return cur
			}
			time.Sleep(learnPoll)
		}
	}
}

// learnWait bounds how long a send waits for the session's latest private read to be seen;
// learnPoll is how often the transcripts are read meanwhile. The CLI 2.1.332 wrote the result
// within half a second of the next call's hook starting, in every run tried.
const learnWait, learnPoll = time.Second, 20 * time.Millisecond

func (l *Lane) loadFlowLocked() {
	if !l.flowReady {
		l.flow, l.flowReady = flow.Restore(l.env.Offsets.Note(flow.NoteKey(l.dir))), true
	}
}
