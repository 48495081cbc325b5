package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/corpus"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

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
	return policy.Candidate(file, env, paths)
}

func writeReplay(w io.Writer, res *corpus.Replayed, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(res)
		return
	}
	fmt.Fprintf(w, "replayed %d of %d records (%d whose input was not logged, %d guard events, %d invalid lines)\n",
		res.Replayed, res.Records, res.NotLogged, res.GuardEvents, res.Invalid)
	if res.Flows > 0 {
		fmt.Fprintf(w, "%d calls matched a flow rule, each session's calls replayed in order with what it took in and read before them\n", res.Flows)
	}
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
			fmt.Fprintf(w, "  %s %s %s  (%s → %s)\n", ex.RID, ex.Tool, ex.Input, cmp.Or(ex.OldRule, "no rule"), cmp.Or(ex.NewRule, "no rule"))
			for _, f := range ex.Flow {
				fmt.Fprintf(w, "      flow: %s\n", f)
			}
		}
	}
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
	res := corpus.NewReplayed()
	retained, files := telemetry.Archive(logFile)
	for _, name := range append(retained, files...) {
		if err := replayFile(ctx, c, name, res); err != nil {
			fmt.Fprintf(sio.err, "coworkbridge check: %v\n", err)
			return exitFail
		}
	}
	writeReplay(sio.out, res, asJSON)
	return exitOK
}

func replayFile(ctx context.Context, c *classifier.Classifier, name string, res *corpus.Replayed) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("open decision log: %w", err)
	}
	defer f.Close()
	if err := corpus.Replay(ctx, c, f, res); err != nil {
		return fmt.Errorf("replay %s: %w", name, err)
	}
	return nil
}
