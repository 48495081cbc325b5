package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// Real agent traffic, each session's calls in order with the flow they make, gains at most 0.2%
// asks from the flow rules: a flow rule that fired on ordinary work would teach users to click
// through it. (A budget on the whole set, not on its rows.)
func TestFlowRulesAskAboutAlmostNothingInRealTraffic(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "shared", "corpus", "realtraffic.jsonl"))
	if err != nil {
		cbtest.NoShared(t, "the real-traffic corpus", err)
	}
	defer f.Close()
	c, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	// Each row as a record of its session (the transcript it was taken from), replayed in order:
	// the replay keeps each session's flow as the daemon does.
	res := NewReplayed()
	calls, sessions := 0, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), MaxLine)
	for sc.Scan() {
		var r struct {
			Row
			Source struct {
				Path string `json:"path"`
			} `json:"source"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		p, ok := r.payload()
		if !ok {
			continue
		}
		calls++
		sessions[r.Source.Path] = true
		res.add(context.Background(), c, logged{RID: r.ID, Session: r.Source.Path, Tool: p.ToolName, Input: p.ToolInput, Cwd: p.Cwd, Decision: "allow"})
	}
	asked := res.Flows
	for _, ex := range res.Examples {
		for _, e := range ex {
			if len(e.Flow) > 0 {
				t.Logf("asked: %s", strings.Join(e.Flow, " | "))
			}
		}
	}
	if calls < 1000 {
		t.Fatalf("read %d calls; has the corpus changed?", calls)
	}
	share := float64(asked) / float64(calls)
	t.Logf("flow rules asked about %d of %d calls (%.2f%%) in %d sessions", asked, calls, 100*share, len(sessions))
	if share > 0.002 {
		t.Errorf("flow rules asked about %.2f%% of real traffic, more than 0.2%%", 100*share)
	}
}
