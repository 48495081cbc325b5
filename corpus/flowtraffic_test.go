package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
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
	flows := map[string]*flow.State{}
	calls, asked := 0, 0
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
		st := flows[r.Source.Path]
		if st == nil {
			st = &flow.State{}
			flows[r.Source.Path] = st
		}
		v := c.Evaluate(context.Background(), p)
		facets := v.Flow
		fv, flowed := c.WithFlow(v, *st, facets, r.ID, p.ToolName)
		if len(flowed) > 0 && strings.HasPrefix(fv.RuleID, "flow.") {
			asked++
			t.Logf("asked: %s", strings.Join(flowed, " | "))
		}
		if fv.Decision != claudehook.Deny {
			st.Take(facets.Untrusted, facets.Private, r.ID, p.ToolName, time.Time{})
		}
	}
	if calls < 1000 {
		t.Fatalf("read %d calls; has the corpus changed?", calls)
	}
	share := float64(asked) / float64(calls)
	t.Logf("flow rules asked about %d of %d calls (%.2f%%) in %d sessions", asked, calls, 100*share, len(flows))
	if share > 0.002 {
		t.Errorf("flow rules asked about %.2f%% of real traffic, more than 0.2%%", 100*share)
	}
}
