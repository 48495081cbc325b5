// Package judgement decides one tool call, the same way whichever door it came through (a
// session's spool or host channel, the host hook, the system daemon's socket, or a replay): the
// classifier under a budget, with a panic or a spent budget taken for a deny; the call judged
// again where the Mac's links take its paths; the session's flow and quarantine; the admin's
// notice and what the hook prints; the receipt the session's reconciliation counts; and the
// record. Every record coworkbridge writes is built here, one constructor per kind.
//
// It is pure: it does not open a file, start a goroutine or take a lock. What it needs from the
// machine (where links lead, the protected places by identity, the clock) comes in through Judge,
// and what it decides goes out in Outcome: writing the answer, the record and the flow is the
// caller's.
package judgement

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/internal/realpath"
	"github.com/coworkbridge/coworkbridge/internal/runfile"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// Rules is the policy engine a judgement asks; *classifier.Classifier is the one that ships.
// The boundary is real: a test puts a failing engine behind every door through it.
type Rules interface {
	EvaluateCall(ctx context.Context, c classifier.Call) classifier.Verdict
	WithFlow(v classifier.Verdict, st flow.State, f classifier.Facets, call, tool string) (classifier.Verdict, []string)
	Effects(p claudehook.Payload) []string
}

// Budget bounds one evaluation. The classifier's analysis limits keep ordinary and hostile
// calls far below it; reaching it means something unforeseen, and the call is denied.
const Budget = 2 * time.Second

// Judge is what judging needs besides the call, fixed for one configuration.
type Judge struct {
	Cfg   managedconfig.Config
	Rules Rules
	// Links says where the Mac's links take a path (filepath.EvalSymlinks); nil judges the
	// paths as written only (a replay, on a machine that is not the one the call came from).
	Links func(string) (string, error)
	// Places are the protected places by identity (a realpath.Cache's Get); nil: none known.
	Places func() realpath.Identities
	// Budget bounds the classifier (0: Budget).
	Budget time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Call is one tool call as a door hands it over, with what its session's state says of it.
type Call struct {
	Door    Door
	Payload claudehook.Payload
	// RID is the call's request id: the spool's, or a fresh one for a host hook's call.
	RID string
	// Session names the session in the record and in the notice; Own is its folder ("" for a
	// call from no session of Cowork's), whose files are not another session's.
	Session, Own string
	// Waiting: a hook waits for this answer, so that in enforce it is applied.
	Waiting bool
	// Flow is the session's flow before this call; FlowErr, when set, says why it could not be
	// read (the call is judged without it, and a send's record says so).
	Flow    flow.State
	FlowErr error
	// Learn, when set, brings Flow up to date with what the session's latest private read
	// showed (its result in the transcript), for a call that sends while that read is not yet
	// seen. It may wait a little: the CLI writes a result while the next call's hooks run.
	Learn func(flow.State) flow.State `json:"-"`
	// Home is the home of the user whose shell runs the call on the Mac, for the paths its
	// command names from ~ (see Judge.where); "" where none applies.
	Home string `json:"-"`
	// Quarantined is why the session is quarantined; "" when it is not.
	Quarantined string
	// CLIVersion is the session's Claude Code version, when known.
	CLIVersion string
	// User and Host fill the admin's notice, and the record when User is the kernel's word
	// (the socket); RecordUser says so.
	User, Host string
	RecordUser bool
	// Note is added to the record's reason (how the call was judged, when not the usual way).
	Note string
	// Started is when the door took the call, for the record's latency.
	Started time.Time
	// Resolved is the call where the Mac's links take its paths, worked out by the door itself
	// (a system-mode worker, as the user whose session it is, so that root reads nothing of the
	// user's); nil: Judge.Links works it out.
	Resolved *Resolution `json:",omitempty"`
	// Read reads a file the call's shell command runs, as the user the call runs as (see
	// classifier.ReadRuns); nil: none is read, and the files it runs are judged by name.
	Read func(path string) (string, error) `json:"-"`
	// Where is where the Mac's links and the protected places' identities take a path the call's
	// shell command names, for a shell that runs on this machine (classifier.Call.Where); nil:
	// the command's paths are judged as written.
	Where func(path string) (string, bool) `json:"-"`
}

// InVM reports whether the call's shell runs in Cowork's VM: every call of the VM loop, and the
// host loop's shell tool; a door reads the files such a call runs only as the VM sees them.
func (c Call) InVM() bool {
	return c.Door == Spool || c.Payload.ToolName == "mcp__workspace__bash"
}

// Resolution is a call with its paths where the Mac's links take them; Differs says whether
// that is not the call as written (which is then judged twice). Payload is set only when it
// differs.
type Resolution struct {
	Payload claudehook.Payload `json:",omitzero"`
	Differs bool
	// Files are the files the call runs, as the door read them (classifier.ReadRuns); nil:
	// none read. An empty map (read, and none could be) is not nil: such a call is asked about,
	// where one judged with nil is judged by its programs' names. It crosses the link between a
	// worker and root as it is, an empty map included, never left out as empty.
	Files map[string]string
	// Where is where the Mac's links take the paths the call's shell command names, and those
	// the files it runs name (classifier.RunsAndLinks), as the user sees them: only those that
	// lead elsewhere. A door
	// that cannot follow the user's links itself (a system daemon) judges the command with it.
	Where map[string]string `json:",omitempty"`
}

// Outcome is what the judgement decided, for the door to carry out.
type Outcome struct {
	// Verdict is the classifier's, after the flow and the quarantine.
	Verdict classifier.Verdict
	// Facets are what the call takes in, reads and sends, for the session's flow.
	Facets classifier.Facets
	// Flowed names the calls of a flow a rule found.
	Flowed []string
	// Enforced: the verdict is applied (enforce, a waiting hook, a rule not in observe).
	Enforced bool
	// Applied is what the hook is answered: the verdict when enforced, no objection otherwise.
	Applied claudehook.Decision
	// Shown is the reason the hook is given: the admin's notice around coworkbridge's reason.
	Shown string
	// Failed: the classifier panicked or spent its budget, and the call was denied for it.
	Failed bool
	// Notable: the call matters as evidence, whatever a quarantine made of it: the rules would
	// refuse or ask about it, it is a step of a flow (it takes in outside content, reads private
	// data or sends), or it could not be judged. A budget of the decision log never folds it
	// into a summary.
	Notable bool
	// Record is the call's record in the decision log.
	Record telemetry.Record
	// Receipt is what the session's reconciliation counts of a call judged on the Mac (the hook
	// and socket doors), which reaches the session's lane this way; zero without a tool_use_id,
	// and at the session's own doors, whose lane counts the call itself.
	Receipt claudehook.Receipt
}

// Output is what the hook prints: nothing for no objection.
func (o Outcome) Output() []byte { return claudehook.Output(o.Applied, o.Shown, o.Verdict.Nudge) }

// Ran reports whether the call is let run, so that what it took in and read counts in the
// session's flow: a call refused took nothing in and read nothing.
func (o Outcome) Ran() bool { return o.Applied != claudehook.Deny }

// Decide judges c: the classifier under the budget (a panic or a spent budget is a deny), again
// where the Mac's links take its paths, by the session's flow, and under its quarantine.
func (j Judge) Decide(ctx context.Context, c Call) Outcome {
	v, failed := j.evaluate(ctx, c)
	facets := v.Flow
	flowCall := cmp.Or(c.Payload.ToolUseID, c.RID)
	if c.Door.Waits() || flowCall == "" {
		flowCall = cmp.Or(c.Payload.ToolUseID, "this call") // a host hook's rid is its own, named nowhere else
	}
	st := c.Flow
	if facets.Send != "" && c.Learn != nil && st.Private != nil && !st.Private.Seen {
		st = c.Learn(st)
	}
	v, flowed := j.withFlow(v, st, facets, flowCall, c.Payload.ToolName)
	if c.FlowErr != nil && facets.Send != "" {
		flowed = append(flowed, "judged without the session's flow: "+c.FlowErr.Error())
	}
	notable := v.Decision != claudehook.Allow || failed || facets.Untrusted != "" || facets.Private != "" || facets.Send != ""
	if c.Quarantined != "" {
		v = classifier.Verdict{Decision: claudehook.Deny, RuleID: ruleid.Quarantine, Reason: QuarantineReason(c.Quarantined)}
	}
	o := Outcome{Verdict: v, Facets: facets, Flowed: flowed, Failed: failed, Notable: notable}
	o.Enforced = c.Waiting && j.Cfg.Mode == managedconfig.Enforce && !v.ObserveOnly
	o.Applied = claudehook.Allow
	if o.Enforced {
		o.Applied = v.Decision
	}
	o.Shown = j.explain(c, o.Applied, v.RuleID, v.HookReason())
	if c.Door == Offline {
		return o
	}
	o.Record = j.judged(c, o)
	if c.Payload.ToolUseID != "" && c.Door.Waits() {
		o.Receipt = claudehook.Receipt{V: 1, ToolUseID: c.Payload.ToolUseID, Tool: c.Payload.ToolName,
			Denied: !o.Ran(), Fingerprint: transcript.FingerprintIn(c.Payload.ToolInput, c.Payload.Cwd)}
		if o.Ran() {
			o.Receipt.Untrusted, o.Receipt.Private = facets.Untrusted, facets.Private
		}
	}
	return o
}

// Refuse is the outcome of a call no rule can judge (an event that cannot be read, one too
// large, a forged line): denied under rule in enforce when a hook waits, recorded in either mode.
func (j Judge) Refuse(c Call, rule, reason string) Outcome {
	o := Outcome{Verdict: classifier.Verdict{Decision: claudehook.Deny, RuleID: rule, Reason: reason}}
	o.Enforced = c.Waiting && j.Cfg.Mode == managedconfig.Enforce
	o.Applied = claudehook.Allow
	if o.Enforced {
		o.Applied = claudehook.Deny
	}
	o.Shown = j.explain(c, o.Applied, rule, "coworkbridge: "+reason)
	o.Record = Fault(c.Door, j.now(), c.Session, c.RID, j.Cfg.Mode, rule, reason)
	o.Record.Enforced = o.Enforced
	return o
}

// evaluate runs the classifier under the budget; a panic, or a budget spent, is a deny.
func (j Judge) evaluate(ctx context.Context, c Call) (v classifier.Verdict, failed bool) {
	if j.Rules == nil {
		return failure("no policy is loaded"), true
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(j.Budget, Budget))
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			v, failed = failure(fmt.Sprintf("the policy engine failed on it (%v)", r)), true
		}
	}()
	call := classifier.Call{Payload: c.Payload, Own: c.Own, Resolve: j.resolve, InVM: c.InVM(),
		SessionGuarded: c.Door == Spool || c.Door == Channel, Where: c.Where}
	if r := c.Resolved; r != nil {
		call.Resolve = func(p claudehook.Payload) (claudehook.Payload, bool) {
			if !r.Differs {
				return p, false
			}
			return r.Payload, true
		}
		call.Files = r.Files
		if call.Where == nil && r.Where != nil {
			call.Where = func(p string) (string, bool) { w, ok := r.Where[p]; return w, ok }
		}
	}
	if call.Files == nil {
		call.Read = c.Read
	}
	if call.Where == nil && j.Links != nil {
		call.Where = j.where(c)
	}
	v = j.Rules.EvaluateCall(ctx, call)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && (v.Decision != claudehook.Deny || v.ObserveOnly) {
		// An engine that saw its budget end and still let the call through did not judge it.
		return failure(fmt.Sprintf("the policy engine did not decide within %s", cmp.Or(j.Budget, Budget))), true
	}
	return v, false
}

// withFlow is the flow's judgement of a call, where a panic in the flow rules is a deny.
func (j Judge) withFlow(v classifier.Verdict, st flow.State, f classifier.Facets, call, tool string) (w classifier.Verdict, flowed []string) {
	defer func() {
		if r := recover(); r != nil {
			w, flowed = failure(fmt.Sprintf("the flow rules failed on it (%v)", r)), nil
		}
	}()
	return j.Rules.WithFlow(v, st, f, call, tool)
}

func failure(why string) classifier.Verdict {
	return classifier.Verdict{Decision: claudehook.Deny, RuleID: ruleid.ClassifierError,
		Reason: "this tool call was blocked because " + why}
}

// where is, for a shell command a door in this process judges, where the paths it names lead
// by identity (classifier.Call.Where): for a shell on the Mac, its links and the protected
// places' identities, from the user's home; for a shell in the VM, a file of the session's
// folder that is a hard link to a protected file (the VM sees the same file through its
// mount, while its links are its own). nil when neither applies.
func (j Judge) where(c Call) func(string) (string, bool) {
	places := j.Places
	if places == nil {
		places = func() realpath.Identities { return realpath.Identities{} }
	}
	switch {
	case c.InVM() && c.Own != "":
		return func(p string) (string, bool) {
			rel, ok := runfile.GuestPath(p)
			if !ok || rel == "" {
				return p, false
			}
			return realpath.HardLinked(filepath.Join(c.Own, rel), places)
		}
	case !c.InVM() && c.Home != "":
		return realpath.Where(c.Home, j.Links, places)
	}
	return nil
}

// resolve is the call with its paths where the Mac's links take them, when that differs.
func (j Judge) resolve(p claudehook.Payload) (claudehook.Payload, bool) {
	if j.Links == nil {
		return p, false
	}
	places := j.Places
	if places == nil {
		places = func() realpath.Identities { return realpath.Identities{} }
	}
	return realpath.Resolve(p, j.Links, places)
}

// explain is what the hook is told for decision d: for a deny or an ask, the admin's notice for
// rule around coworkbridge's reason.
func (j Judge) explain(c Call, d claudehook.Decision, rule, reason string) string {
	if d == claudehook.Allow {
		return reason
	}
	return j.Cfg.Policy.Notices.Explain(reason, managedconfig.NoticeFacts{Rule: rule, RID: c.RID, Decision: string(d),
		Session: c.Session, User: c.User, Host: c.Host})
}

func (j Judge) now() time.Time {
	if j.Now == nil {
		return time.Now()
	}
	return j.Now()
}

// judged is the record of a call the rules judged.
func (j Judge) judged(c Call, o Outcome) telemetry.Record {
	p, v := c.Payload, o.Verdict
	rec := telemetry.Record{TS: j.now(), RID: c.RID, Session: c.Session, Agent: c.Door.Agent(), Transport: c.Door.Transport(),
		Mode: string(j.Cfg.Mode), Enforced: o.Enforced, Tool: p.ToolName, Input: orNull(p.ToolInput), Cwd: p.Cwd,
		Decision: v.Decision, Rule: v.RuleID, Reason: joinReason(v.Reason, c.Note),
		ToolUseID: p.ToolUseID, CLISessionID: p.SessionID, PromptID: p.PromptID, CLIVersion: c.CLIVersion, Flow: o.Flowed}
	if c.RecordUser {
		rec.User = c.User
	}
	if !c.Started.IsZero() {
		rec.LatencyUS = j.now().Sub(c.Started).Microseconds()
	}
	if v.Decision != claudehook.Allow { // what check shows, kept for whoever reads the record
		rec.Matched, rec.Nudge, rec.Effects = v.Matched, v.Nudge, j.effects(p, v)
	}
	return rec
}

// effects are the effects check shows for p, judged v: as the evaluation kept them, or found
// again; a panic in finding them leaves them out.
func (j Judge) effects(p claudehook.Payload, v classifier.Verdict) (e []string) {
	defer func() {
		if recover() != nil {
			e = nil
		}
	}()
	if e, ok := v.Effects(); ok {
		return e
	}
	return j.Rules.Effects(p)
}

// QuarantineReason is what the user and the agent are told of a call refused by a quarantine.
func QuarantineReason(why string) string {
	return "this session is quarantined because " + why + "; every tool call is blocked until coworkbridge has repaired the session. Ask your IT team if this persists."
}

func orNull(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("null")
	}
	return in
}

func joinReason(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "; " + b
}
