package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

func cmdCheck(ctx context.Context, args []string, sio stdio) int {
	fs := newFlags("check", "[--bash CMD | --write PATH | PAYLOAD.json | - | --corpus FILE.jsonl... | --replay LOG [--config CANDIDATE]] [--json]",
		"Classifies one tool call with the policy in force (managed.json's, or the last good copy the daemon\n"+
			"runs on), or reads a PreToolUse payload from a file or stdin ('-'), or scores the policy on labelled\n"+
			"corpora, or judges every call of a decision log again under a candidate managed.json and shows\n"+
			"what would change. An invalid managed.json with no good copy is an error, never a silent fallback\n"+
			"to the built-in rules. Exit status 0 whatever the verdict; 1 on error; 64 usage.", sio)
	bash := fs.String("bash", "", "classify this shell command")
	write := fs.String("write", "", "classify a Write to this path")
	cwd := fs.String("cwd", "/home/user/project", "working folder for --bash and --write")
	asJSON := fs.Bool("json", false, "print one JSON object: decision, rule, reason, matched")
	var corpora multiFlag
	fs.Var(&corpora, "corpus", "score a labelled corpus (JSON lines: tool, command, expect); repeatable")
	misses := fs.Bool("show-misses", false, "with --corpus, list the rows whose verdict disagrees")
	replayLog := fs.String("replay", "", "judge every call of this decision log again and show what would change")
	candidate := fs.String("config", "", "with --replay: the candidate managed.json to judge with (default: the one in force)")
	if code, done := fs.parse(args); done {
		return code
	}
	if *candidate != "" && *replayLog == "" {
		return fs.usageError("--config names the candidate for --replay; give --replay LOG too")
	}
	if *replayLog != "" {
		if *bash != "" || *write != "" || len(corpora) > 0 || fs.NArg() > 0 {
			return fs.usageError("--replay cannot be combined with a call to classify or --corpus")
		}
		return runReplay(ctx, *replayLog, *candidate, *asJSON, sio)
	}
	if fs.NArg() > 1 {
		return fs.usageError("check takes at most one payload file, got %d", fs.NArg())
	}
	if *bash == "" && *write == "" && len(corpora) == 0 && fs.NArg() == 0 && stdinIsTerminal(sio.in) {
		// Nothing to read but a person at a terminal: say what check wants instead of waiting.
		fs.printUsage(sio.err)
		return exitUsage
	}
	c, note, err := policyClassifier()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	if note != "" {
		fmt.Fprintln(sio.err, "coworkbridge check:", note)
	}
	if len(corpora) > 0 {
		for _, f := range corpora {
			if err := scoreCorpus(ctx, c, f, *misses, sio.out); err != nil {
				fmt.Fprintln(sio.err, "coworkbridge check:", err)
				return exitFail
			}
		}
		return exitOK
	}
	p, err := checkPayload(*bash, *write, *cwd, fs.Args(), sio.in)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	v := c.Evaluate(ctx, p)
	if *asJSON {
		json.NewEncoder(sio.out).Encode(map[string]any{"decision": string(v.Decision), "rule": v.RuleID, "reason": v.Reason, "matched": v.Matched,
			"effects": c.Effects(p)})
		return exitOK
	}
	fmt.Fprintf(sio.out, "decision: %s\n", v.Decision)
	if v.RuleID != "" {
		fmt.Fprintf(sio.out, "rule:     %s\nreason:   %s\nmatched:  %s\n", v.RuleID, v.Reason, v.Matched)
	}
	if v.Nudge != "" {
		fmt.Fprintf(sio.out, "nudge:    %s\n", v.Nudge)
	}
	if v.ObserveOnly {
		fmt.Fprintln(sio.out, "mode:     observe (reported, not applied)")
	}
	for i, e := range c.Effects(p) {
		label := "effects: "
		if i > 0 {
			label = "         "
		}
		fmt.Fprintf(sio.out, "%s %s\n", label, e)
	}
	return exitOK
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func stdinIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}

// policyClassifier compiles the policy in force: managed.json's, the last good copy's when the
// file is invalid (note says so), the built-in rules when there is no file. An invalid file with
// no good copy is an error: checking with rules the daemon does not run would mislead.
func policyClassifier() (c *classifier.Classifier, note string, err error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return nil, "", err
	}
	paths, err := env.Paths()
	if err != nil {
		return nil, "", err
	}
	s := managedconfig.NewLoader(env, paths).Load()
	switch s.Origin {
	case managedconfig.OriginInvalid:
		return nil, "", fmt.Errorf("%v\nwhat to do: fix the file ('coworkbridge validate %s' lists every problem)", s.Problem, s.Path)
	case managedconfig.OriginLastGood:
		note = fmt.Sprintf("%s is invalid; checking with the last good copy the daemon runs on (%v)", s.Path, s.Problem)
	}
	c, err = policy.Compile(s.Config.Policy)
	if err != nil && c != nil {
		return c, strings.TrimSpace(note + "\nthe policy of " + s.Path + " is incomplete: " + err.Error()), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("the policy of %s does not compile:\n%v\nwhat to do: fix it ('coworkbridge validate' lists every problem)", s.Path, err)
	}
	return c, note, nil
}

func checkPayload(bash, write, cwd string, args []string, stdin io.Reader) (claudehook.Payload, error) {
	switch {
	case bash != "":
		in, _ := json.Marshal(map[string]string{"command": bash})
		return claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: cwd, HookEventName: "PreToolUse"}, nil
	case write != "":
		in, _ := json.Marshal(map[string]string{"file_path": write, "content": ""})
		return claudehook.Payload{ToolName: "Write", ToolInput: in, Cwd: cwd, HookEventName: "PreToolUse"}, nil
	}
	var data []byte
	var err error
	if len(args) > 0 && args[0] != "-" {
		data, err = os.ReadFile(args[0])
	} else {
		data, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
	}
	if err != nil {
		return claudehook.Payload{}, fmt.Errorf("read payload: %w", err)
	}
	return claudehook.ParsePayload(data)
}

// corpusRow is one labelled command (the format of shared/corpus), or one decision-log record,
// labelled by the decision it got: scoring a candidate policy on a fleet's own log says where it
// would now decide otherwise.
type corpusRow struct {
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
}

// fromLog turns a decision-log record into a labelled row: what was denied or asked is expected
// to be caught, what was allowed to pass.
func (r *corpusRow) fromLog() {
	if r.Expect != "" || r.Decision == "" {
		return
	}
	r.Expect = "deny"
	if r.Decision == "allow" {
		r.Expect = "allow"
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(r.Input, &in) == nil && in.Command != "" {
		r.Command = in.Command
	}
}

type score struct {
	rows, denyRows, caught, denied, allowRows, falseBlocks, asks, crashes int
}

func (s score) line(name string) string {
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	return fmt.Sprintf("%-14s rows %5d  deny caught %4d/%-4d (%5.1f%%, denied %5.1f%%)  allow blocked %4d/%-4d (%4.1f%%)  allow asked %4d (%4.1f%%)  crashes %d",
		name, s.rows, s.caught, s.denyRows, pct(s.caught, s.denyRows), pct(s.denied, s.denyRows), s.falseBlocks, s.allowRows, pct(s.falseBlocks, s.allowRows),
		s.asks, pct(s.asks, s.allowRows), s.crashes)
}

// scoreCorpus classifies every row and prints agreement for all rows and for the scored subset:
// rows that need no context (no env or cwd argument) and are not must-not-crash edge cases.
func scoreCorpus(ctx context.Context, c *classifier.Classifier, file string, showMisses bool, out io.Writer) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("open corpus: %w", err)
	}
	defer f.Close()
	var all, scored score
	var missLines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		var r corpusRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s:%d: %w", file, n, err)
		}
		r.fromLog()
		v, crashed := classifyRow(ctx, c, r)
		counted := []*score{&all}
		if r.Category != "edge_cases" && len(r.Env) == 0 && len(r.CwdArg) == 0 {
			counted = append(counted, &scored)
		}
		miss := false
		for _, s := range counted {
			s.rows++
			if crashed {
				s.crashes++
			}
			switch r.Expect {
			case "deny":
				s.denyRows++
				if v.Decision == claudehook.Deny {
					s.denied++
				}
				if v.Decision != claudehook.Allow {
					s.caught++
				} else {
					miss = true
				}
			case "allow":
				s.allowRows++
				if v.Decision == claudehook.Deny {
					s.falseBlocks++
					miss = true
				} else if v.Decision == claudehook.Ask {
					s.asks++
				}
			}
		}
		if miss && showMisses {
			missLines = append(missLines, fmt.Sprintf("  %s:%d expect %s got %s %s: %q", filepath.Base(file), n, r.Expect, v.Decision, v.RuleID, r.Command))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read corpus: %w", err)
	}
	fmt.Fprintln(out, filepath.Base(file))
	fmt.Fprintln(out, "  "+all.line("all"))
	fmt.Fprintln(out, "  "+scored.line("scored"))
	for _, l := range missLines {
		fmt.Fprintln(out, l)
	}
	return nil
}

func classifyRow(ctx context.Context, c *classifier.Classifier, r corpusRow) (v classifier.Verdict, crashed bool) {
	defer func() {
		if recover() != nil {
			crashed = true
		}
	}()
	var p claudehook.Payload
	if len(r.Input) > 0 && r.Decision != "" && r.Tool != "Bash" && r.Tool != "mcp__workspace__bash" {
		// A decision-log record of another tool: its input as it was logged (redacted values
		// stay redacted).
		p = claudehook.Payload{ToolName: r.Tool, ToolInput: r.Input, Cwd: "/home/user/project", HookEventName: "PreToolUse"}
		return c.Evaluate(ctx, p), false
	}
	if r.Tool == "(raw_hook_json)" {
		var err error
		if p, err = claudehook.ParsePayload([]byte(r.Command)); err != nil {
			return classifier.Verdict{Decision: claudehook.Allow}, false // not a tool call at all
		}
	} else {
		in, _ := json.Marshal(map[string]string{"command": r.Command})
		cwd := "/home/user/project"
		if r.Cwd != "" {
			cwd = r.Cwd
		}
		p = claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: cwd, HookEventName: "PreToolUse"}
	}
	return c.Evaluate(ctx, p), false
}
