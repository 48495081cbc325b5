package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

// A replay judges every call a decision log recorded again, under a candidate configuration,
// and says what would change before the admin ships it. Inputs stay as logged: a redacted
// secret is judged redacted, a call whose input was not logged (telemetry.inputs) cannot be
// judged again and is counted as such.

// replayMaxLine bounds one record read.
const replayMaxLine = 16 << 20

// replayExamples is how many calls each change shows.
const replayExamples = 3

type replayResult struct {
	Records     int                       `json:"records"`
	Replayed    int                       `json:"replayed"`
	NotLogged   int                       `json:"not_replayable_input_not_logged"`
	GuardEvents int                       `json:"not_replayable_guard_events"`
	Invalid     int                       `json:"invalid_lines"`
	Changes     map[string]int            `json:"changes"` // "deny->allow": count
	Examples    map[string][]replayChange `json:"examples"`
}

type replayChange struct {
	RID     string `json:"rid"`
	Tool    string `json:"tool"`
	Input   string `json:"input"`
	OldRule string `json:"old_rule,omitempty"`
	NewRule string `json:"new_rule,omitempty"`
}

// replay re-judges the records of log with c.
func replay(ctx context.Context, c *classifier.Classifier, log io.Reader) (replayResult, error) {
	res := replayResult{Changes: map[string]int{}, Examples: map[string][]replayChange{}}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64<<10), replayMaxLine)
	for sc.Scan() {
		var r struct {
			RID          string          `json:"rid"`
			Session      string          `json:"session"`
			Tool         string          `json:"tool"`
			Input        json.RawMessage `json:"input"`
			Cwd          string          `json:"cwd"`
			Decision     string          `json:"decision"`
			Rule         string          `json:"rule"`
			InputOmitted string          `json:"input_omitted"`
		}
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Decision == "" {
			res.Invalid++
			continue
		}
		res.Records++
		switch {
		case strings.HasPrefix(r.Rule, "coworkbridge."):
			res.GuardEvents++ // a quarantine, a planted file: not a classifier verdict
			continue
		case r.InputOmitted != "" || len(r.Input) == 0 || string(r.Input) == "null":
			res.NotLogged++
			continue
		}
		cwd := r.Cwd
		if cwd == "" {
			cwd = "/sessions/" + r.Session + "/mnt/outputs" // records before schema 2 have none
		}
		v := c.Evaluate(ctx, claudehook.Payload{ToolName: r.Tool, ToolInput: r.Input, Cwd: cwd, HookEventName: "PreToolUse"})
		res.Replayed++
		now := string(v.Decision)
		if v.ObserveOnly && v.Decision != claudehook.Allow {
			now += " (rule in observe)" // reported, not applied, even in enforce mode
		}
		if now == r.Decision {
			continue
		}
		key := r.Decision + "->" + now
		res.Changes[key]++
		if len(res.Examples[key]) < replayExamples {
			in := string(r.Input)
			if len(in) > 160 {
				in = in[:160] + "…"
			}
			res.Examples[key] = append(res.Examples[key], replayChange{RID: r.RID, Tool: r.Tool, Input: in, OldRule: r.Rule, NewRule: v.RuleID})
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return res, fmt.Errorf("a record longer than %d MiB: is this a decision log?", replayMaxLine>>20)
		}
		return res, err
	}
	return res, nil
}

// candidateClassifier compiles the policy of a candidate managed.json, or reports every problem.
func candidateClassifier(file string) (*classifier.Classifier, error) {
	env, err := managedconfig.SystemEnv()
	if err != nil {
		return nil, err
	}
	paths, err := env.Paths()
	if err != nil {
		return nil, err
	}
	problems, cfg := validateFile(file, env, paths)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the candidate %s is invalid:\n  %s\nwhat to do: fix it ('coworkbridge validate %s' says the same)", file, strings.Join(problems, "\n  "), file)
	}
	return policy.Compile(cfg.Policy)
}

func writeReplay(w io.Writer, res replayResult, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(res)
		return
	}
	fmt.Fprintf(w, "replayed %d of %d records (%d whose input was not logged, %d guard events, %d invalid lines)\n",
		res.Replayed, res.Records, res.NotLogged, res.GuardEvents, res.Invalid)
	if len(res.Changes) == 0 {
		fmt.Fprintln(w, "no verdict would change")
		return
	}
	keys := make([]string, 0, len(res.Changes))
	for k := range res.Changes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return res.Changes[keys[i]] > res.Changes[keys[j]] || res.Changes[keys[i]] == res.Changes[keys[j]] && keys[i] < keys[j]
	})
	for _, k := range keys {
		fmt.Fprintf(w, "\n%s: %d\n", strings.Replace(k, "->", " → ", 1), res.Changes[k])
		for _, ex := range res.Examples[k] {
			fmt.Fprintf(w, "  %s %s %s  (%s → %s)\n", ex.RID, ex.Tool, ex.Input, or(ex.OldRule, "no rule"), or(ex.NewRule, "no rule"))
		}
	}
}

func or(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// runReplay is check --replay: each log in turn, its rotated files first.
func runReplay(ctx context.Context, logFile, candidate string, asJSON bool, sio stdio) int {
	var c *classifier.Classifier
	var err error
	if candidate != "" {
		c, err = candidateClassifier(candidate)
	} else {
		var note string
		c, note, err = policyClassifier()
		if note != "" {
			fmt.Fprintln(sio.err, "coworkbridge check:", note)
		}
	}
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge check:", err)
		return exitFail
	}
	f, err := os.Open(logFile)
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge check: open decision log: %v\n", err)
		return exitFail
	}
	defer f.Close()
	res, err := replay(ctx, c, f)
	if err != nil {
		fmt.Fprintf(sio.err, "coworkbridge check: replay %s: %v\n", logFile, err)
		return exitFail
	}
	writeReplay(sio.out, res, asJSON)
	return exitOK
}
