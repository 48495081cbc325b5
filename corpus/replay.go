package corpus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// A replay judges every call a decision log recorded again, under a candidate configuration,
// and says what would change before the admin ships it. Inputs stay as logged: a redacted
// secret is judged redacted, a call whose input was not logged (telemetry.inputs) cannot be
// judged again and is counted as such.

// replayExamples is how many calls each change shows unless Examples is set.
const replayExamples = 3

// Replayed is what a replay found.
type Replayed struct {
	Records     int                 `json:"records"`
	Replayed    int                 `json:"replayed"`
	NotLogged   int                 `json:"not_replayable_input_not_logged"`
	GuardEvents int                 `json:"not_replayable_guard_events"`
	Invalid     int                 `json:"invalid_lines"`
	Changes     map[string]int      `json:"changes"` // "deny->allow": count
	Examples    map[string][]Change `json:"examples"`
	// Flows counts the calls a flow rule matched in the replay: each session's calls are judged
	// in the log's order with the flow they make (package flow), as the daemon judged them.
	Flows int `json:"flows"`

	// flows is each session's flow so far, by host and session.
	flows map[string]*flow.State

	// Keep is how many calls each change keeps as examples (NewReplayed sets 3).
	Keep int `json:"-"`
}

// Change is one call whose verdict would change.
type Change struct {
	RID     string    `json:"rid"`
	TS      time.Time `json:"ts,omitzero"`
	Host    string    `json:"host,omitempty"`
	Session string    `json:"session,omitempty"`
	Tool    string    `json:"tool"`
	Input   string    `json:"input"`
	OldRule string    `json:"old_rule,omitempty"`
	NewRule string    `json:"new_rule,omitempty"`
	// Flow names the calls of the flow a flow rule matched, when one did.
	Flow []string `json:"flow,omitempty"`
}

// NewReplayed is an empty result, to which Replay adds each log in turn.
func NewReplayed() *Replayed {
	return &Replayed{Changes: map[string]int{}, Examples: map[string][]Change{}, Keep: replayExamples, flows: map[string]*flow.State{}}
}

// Replay judges the records of log again with c and adds what it finds to res.
func Replay(ctx context.Context, c *classifier.Classifier, log io.Reader, res *Replayed) error {
	for line, err := range telemetry.Lines(log, MaxLine) {
		if errors.Is(err, telemetry.ErrLineTooLong) {
			return fmt.Errorf("a record longer than %d MiB: is this a decision log?", MaxLine>>20)
		}
		if err != nil {
			return err
		}
		res.AddLine(ctx, c, line)
	}
	return nil
}

// AddLine judges one line of a decision log again: for a reader that reads the log itself
// (report, which drops the records it saw twice before handing them on).
func (res *Replayed) AddLine(ctx context.Context, c *classifier.Classifier, line []byte) {
	var r logged
	if err := json.Unmarshal(line, &r); err != nil || r.Decision == "" {
		res.Invalid++
		return
	}
	res.add(ctx, c, r)
}

// logged is the part of a decision-log record a replay reads (a log written by any version).
type logged struct {
	TS           time.Time       `json:"ts"`
	Host         string          `json:"host"`
	RID          string          `json:"rid"`
	Session      string          `json:"session"`
	Tool         string          `json:"tool"`
	Input        json.RawMessage `json:"input"`
	Cwd          string          `json:"cwd"`
	Decision     string          `json:"decision"`
	Rule         string          `json:"rule"`
	InputOmitted string          `json:"input_omitted"`
	ToolUseID    string          `json:"tool_use_id"`
}

func (res *Replayed) add(ctx context.Context, c *classifier.Classifier, r logged) {
	res.Records++
	switch {
	case ruleid.IsGuard(r.Rule):
		res.GuardEvents++ // a quarantine, a planted file: not a classifier verdict
		return
	case r.InputOmitted != "" || len(r.Input) == 0 || string(r.Input) == "null":
		res.NotLogged++
		return
	}
	cwd := r.Cwd
	if cwd == "" {
		cwd = "/sessions/" + r.Session + "/mnt/outputs" // records before schema 2 have none
	}
	p := claudehook.Payload{ToolName: r.Tool, ToolInput: r.Input, Cwd: cwd, HookEventName: "PreToolUse"}
	v, flowed := res.judge(ctx, c, p, r)
	res.Replayed++
	now := string(v.Decision)
	if v.ObserveOnly && v.Decision != claudehook.Allow {
		now += " (rule in observe)" // reported, not applied, even in enforce mode
	}
	if now == r.Decision {
		return
	}
	key := r.Decision + "->" + now
	res.Changes[key]++
	if len(res.Examples[key]) < res.Keep {
		in := string(r.Input)
		if len(in) > 160 {
			in = in[:160] + "…"
		}
		res.Examples[key] = append(res.Examples[key], Change{RID: r.RID, TS: r.TS, Host: r.Host, Session: r.Session, Tool: r.Tool, Input: in, OldRule: r.Rule, NewRule: v.RuleID, Flow: flowed})
	}
}

// judge judges the call as it was made, by its session's flow so far, and takes what it took in
// and read into the flow unless the replayed verdict refuses it.
func (res *Replayed) judge(ctx context.Context, c *classifier.Classifier, p claudehook.Payload, r logged) (classifier.Verdict, []string) {
	if res.flows == nil {
		res.flows = map[string]*flow.State{}
	}
	key := r.Host + "\x00" + r.Session
	st := res.flows[key]
	if st == nil {
		st = &flow.State{}
		res.flows[key] = st
	}
	o := judgement.Judge{Rules: c}.Decide(ctx, judgement.Call{Door: judgement.Offline, Payload: p, RID: r.RID, Flow: *st})
	v := o.Verdict
	if len(o.Flowed) > 0 && strings.HasPrefix(v.RuleID, "flow.") {
		res.Flows++
	}
	if v.Decision != claudehook.Deny {
		call := cmp.Or(r.ToolUseID, r.RID)
		st.Take(o.Facets.Untrusted, o.Facets.Private, call, r.Tool, r.TS)
	}
	return v, o.Flowed
}
