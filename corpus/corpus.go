// Package corpus measures a classifier on recorded tool calls: a labelled corpus (JSON lines of
// commands and the verdict each should get, as other guards publish them, or a decision log
// whose records are labelled by the decision they got), and a replay, which judges every call of
// a decision log again under a candidate policy and says what would change.
//
// It reads the files it is given and nothing else; it neither compiles policies (policy does)
// nor prints for people (cmd/coworkbridge does).
package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// MaxLine bounds one row or record read.
const MaxLine = 16 << 20

// defaultCwd is where a row's command runs when the row does not say.
const defaultCwd = "/home/user/project"

// Row is one labelled command (the format of shared/corpus), or one decision-log record,
// labelled by the decision it got: scoring a candidate policy on a fleet's own log says where it
// would now decide otherwise.
type Row struct {
	Tool     string          `json:"tool"`
	Command  string          `json:"command"`
	Expect   string          `json:"expect"`
	Category string          `json:"category"`
	Env      json.RawMessage `json:"env"`
	CwdArg   json.RawMessage `json:"cwd_arg"`
	// A decision-log record's fields.
	Input    json.RawMessage `json:"input"`
	Decision string          `json:"decision"`
	// Cwd, where a corpus gives it (nah's rows do), is the folder the command runs in.
	Cwd string `json:"cwd"`
	// ID names a row where the corpus gives it (realworld's and realtraffic's rows do).
	ID string `json:"id"`
}

// fromLog turns a decision-log record into a labelled row: what was denied or asked is expected
// to be caught, what was allowed to pass.
func (r *Row) fromLog() {
	if r.Expect != "" || r.Decision == "" {
		if r.Command == "" && len(r.Input) > 0 { // a row given as a tool call (realworld, realtraffic)
			r.Command = commandOf(r.Input)
		}
		return
	}
	r.Expect = "deny"
	if r.Decision == string(claudehook.Allow) {
		r.Expect = "allow"
	}
	if cmd := commandOf(r.Input); cmd != "" {
		r.Command = cmd
	}
}

// commandOf is the shell command of a tool input, or the input itself for other tools.
func commandOf(input json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(input, &in) == nil && in.Command != "" {
		return in.Command
	}
	return string(input)
}

// scored reports whether a row counts in the scored subset: it needs no context (no env or cwd
// argument) and is not a must-not-crash edge case.
func (r Row) scored() bool {
	return r.Category != "edge_cases" && len(r.Env) == 0 && len(r.CwdArg) == 0
}

// Tally counts how a classifier did on a set of rows.
type Tally struct {
	Rows     int
	DenyRows int // rows expected to be denied
	Caught   int // of those, denied or asked
	Denied   int // of those, denied
	// EitherRows are rows for which a deny and an ask are both right (deny_or_ask, ask);
	// EitherCaught, those denied or asked.
	EitherRows, EitherCaught int
	AllowRows                int // rows expected to pass
	// FalseBlocks are allow rows denied; Asks, allow rows asked about.
	FalseBlocks, Asks int
	Crashes           int
}

// Miss is a row whose verdict disagrees with its label: a deny row let through or only asked
// about, a deny-or-ask row let through, or an allow row denied.
type Miss struct {
	Line    int
	ID      string
	Expect  string
	Got     claudehook.Decision
	Rule    string
	Command string
}

// Score is the result of Measure: every row, the scored subset, the misses, and the allow
// rows asked about (the friction an admin weighs before enforcing), each with its rule.
type Score struct {
	All, Scored Tally
	Misses      []Miss
	Asked       []Miss
	// Verdicts are every row's, in order, for a record of them that shows what a change moved.
	Verdicts []Miss
}

// Measure classifies every row of r with c. A line that is not a row is an error naming it.
func Measure(ctx context.Context, c *classifier.Classifier, r io.Reader) (Score, error) {
	var s Score
	n := 0
	for line, err := range telemetry.Lines(r, MaxLine) {
		n++
		if err != nil {
			return s, fmt.Errorf("line %d: %w", n, err)
		}
		var row Row
		if err := json.Unmarshal(line, &row); err != nil {
			return s, fmt.Errorf("line %d: %w", n, err)
		}
		row.fromLog()
		v, crashed := classify(ctx, c, row)
		miss := s.All.count(row, v, crashed)
		if row.scored() {
			s.Scored.count(row, v, crashed)
		}
		m := Miss{Line: n, ID: row.ID, Expect: row.Expect, Got: v.Decision, Rule: v.RuleID, Command: row.Command}
		s.Verdicts = append(s.Verdicts, m)
		switch {
		case miss:
			s.Misses = append(s.Misses, m)
		case row.Expect == "allow" && v.Decision == claudehook.Ask:
			s.Asked = append(s.Asked, m)
		}
	}
	return s, nil
}

// count adds one row and reports whether its verdict is a miss.
func (t *Tally) count(r Row, v classifier.Verdict, crashed bool) (miss bool) {
	t.Rows++
	if crashed {
		t.Crashes++
	}
	switch r.Expect {
	case "deny":
		t.DenyRows++
		switch v.Decision {
		case claudehook.Deny:
			t.Denied++
		case claudehook.Allow:
			return true
		}
		t.Caught++
		return v.Decision != claudehook.Deny
	case "deny_or_ask", "ask":
		t.EitherRows++
		if v.Decision == claudehook.Allow {
			return true
		}
		t.EitherCaught++
	case "allow":
		t.AllowRows++
		switch v.Decision {
		case claudehook.Deny:
			t.FalseBlocks++
			return true
		case claudehook.Ask:
			t.Asks++
		}
	}
	return false
}

// classify judges one row; a panic is counted, not propagated, so that one row cannot hide the
// rest of the score.
func classify(ctx context.Context, c *classifier.Classifier, r Row) (v classifier.Verdict, crashed bool) {
	p, ok := r.payload()
	if !ok {
		return classifier.Verdict{Decision: claudehook.Allow}, false // not a tool call at all
	}
	o := judgement.Judge{Rules: c}.Decide(ctx, judgement.Call{Door: judgement.Offline, Payload: p})
	if o.Failed {
		return classifier.Verdict{}, true
	}
	return o.Verdict, false
}

// payload is the tool call a row stands for.
func (r Row) payload() (claudehook.Payload, bool) {
	cwd := defaultCwd
	if r.Cwd != "" {
		cwd = r.Cwd
	}
	if len(r.Input) > 0 && string(r.Input) != "null" && r.Tool != "" {
		// A tool call as a corpus gives it, or a decision-log record: its input as it was
		// logged (redacted values stay redacted).
		return claudehook.Payload{ToolName: r.Tool, ToolInput: r.Input, Cwd: cwd, HookEventName: "PreToolUse"}, true
	}
	if r.Tool == "(raw_hook_json)" {
		p, err := claudehook.ParsePayload([]byte(r.Command))
		return p, err == nil
	}
	in, _ := json.Marshal(map[string]string{"command": r.Command})
	return claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: cwd, HookEventName: "PreToolUse"}, true
}
