package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

func cmdCheck(ctx context.Context, args []string, sio stdio) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(sio.err)
	bash := fs.String("bash", "", "classify this shell command")
	write := fs.String("write", "", "classify a Write to this path")
	cwd := fs.String("cwd", "/home/user/project", "working folder for --bash and --write")
	asJSON := fs.Bool("json", false, "print one JSON object: decision, rule, reason, matched")
	var corpora multiFlag
	fs.Var(&corpora, "corpus", "score a labelled corpus (JSON lines: tool, command, expect); repeatable")
	misses := fs.Bool("show-misses", false, "with --corpus, list the rows whose verdict disagrees")
	fs.Usage = func() {
		fmt.Fprintln(sio.err, "Usage: coworkbridge check [--bash CMD | --write PATH | PAYLOAD.json | --corpus FILE.jsonl ...]\n\n"+
			"Classifies one tool call with the policy in force (managed.json's policy if there is one), or reads a\n"+
			"PreToolUse payload from a file or stdin. Exit status 0 whatever the verdict; 1 on error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	c, err := policyClassifier()
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
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
		json.NewEncoder(sio.out).Encode(map[string]string{"decision": string(v.Decision), "rule": v.RuleID, "reason": v.Reason, "matched": v.Matched})
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
	return exitOK
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// policyClassifier compiles the policy of the managed config in force, or the defaults.
func policyClassifier() (*classifier.Classifier, error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return nil, err
	}
	paths, err := env.Paths()
	if err != nil {
		return nil, err
	}
	s := managedconfig.NewLoader(env, paths).Load()
	return classifierFor(s.Config.Policy)
}

// classifierFor turns managed.json's policy into a compiled classifier.
func classifierFor(p managedconfig.Policy) (*classifier.Classifier, error) {
	files, err := classifier.LoadRuleDirs(p.RulesDirs)
	if err != nil {
		return nil, err
	}
	modes := map[string]string{}
	for id, m := range p.RuleModes {
		modes[id] = string(m)
	}
	return classifier.New(classifier.Policy{
		RuleFiles: files, DisabledRules: p.DisabledRules, RuleModes: modes,
		AllowedExecutables: p.AllowedExecutables, AllowedMCPServers: p.AllowedMCPServers, RestrictMCPServers: p.RestrictMCPServers,
	})
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

// corpusRow is one labelled command (the format of shared/corpus).
type corpusRow struct {
	Tool     string          `json:"tool"`
	Command  string          `json:"command"`
	Expect   string          `json:"expect"`
	Category string          `json:"category"`
	Env      json.RawMessage `json:"env"`
	CwdArg   json.RawMessage `json:"cwd_arg"`
}

type score struct {
	rows, denyRows, caught, allowRows, falseBlocks, asks, crashes int
}

func (s score) line(name string) string {
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	return fmt.Sprintf("%-14s rows %5d  deny caught %4d/%-4d (%5.1f%%)  allow blocked %4d/%-4d (%4.1f%%)  allow asked %4d (%4.1f%%)  crashes %d",
		name, s.rows, s.caught, s.denyRows, pct(s.caught, s.denyRows), s.falseBlocks, s.allowRows, pct(s.falseBlocks, s.allowRows),
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
	if r.Tool == "(raw_hook_json)" {
		var err error
		if p, err = claudehook.ParsePayload([]byte(r.Command)); err != nil {
			return classifier.Verdict{Decision: claudehook.Allow}, false // not a tool call at all
		}
	} else {
		in, _ := json.Marshal(map[string]string{"command": r.Command})
		p = claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: "/home/user/project", HookEventName: "PreToolUse"}
	}
	return c.Evaluate(ctx, p), false
}
