package lane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/judgement/judgementtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func TestAFailingEngineAtTheSpoolIsADenyAndARecord(t *testing.T) {
	for _, e := range judgementtest.Failing() {
		t.Run(e.Name, func(t *testing.T) {
			f := newLane(t, managedconfig.Enforce)
			f.failWith(e.Rules)
			rid := f.call("enforce", "ls")
			f.pass()
			if ok, denied := f.answered(rid); !ok || !denied {
				t.Fatalf("the waiting hook was not denied (answered %v)", ok)
			}
			recs := f.records()
			if len(recs) != 1 || recs[0].RID != rid || recs[0].Rule != ruleid.ClassifierError || recs[0].Decision != claudehook.Deny ||
				!recs[0].Enforced || recs[0].Transport != telemetry.TransportSpool {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

func TestAFailingEngineAtTheHostChannelIsADenyAndARecord(t *testing.T) {
	for _, e := range judgementtest.Failing() {
		t.Run(e.Name, func(t *testing.T) {
			f := newLane(t, managedconfig.Enforce)
			root := filepath.Join(filepath.Dir(filepath.Dir(f.dir)), "channel")
			f.lane = New(f.env, f.dir, root)
			t.Cleanup(f.lane.Release)
			ch := filepath.Join(session.ChannelDir(root, f.lane.ID()), filepath.FromSlash(session.BridgeDir))
			if err := os.MkdirAll(filepath.Join(ch, "decisions"), 0o700); err != nil {
				t.Fatal(err)
			}
			f.failWith(e.Rules)
			rid := f.nextRID()
			if err := os.WriteFile(filepath.Join(ch, ".ev-"+rid), []byte("\n"+envelope(rid, "enforce", "Bash", bash("ls"))+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f.lane.Pass(context.Background(), Work{Policy: f.pol, Lease: Lease{Max: f.clock.now.Add(time.Minute)}, Channel: ChannelWork{List: true}})
			out, err := os.ReadFile(filepath.Join(ch, "decisions", rid+".json"))
			if err != nil || !strings.Contains(string(out), `"permissionDecision":"deny"`) {
				t.Fatalf("the waiting hook was not denied: %q %v", out, err)
			}
			recs := f.records()
			if len(recs) != 1 || recs[0].RID != rid || recs[0].Rule != ruleid.ClassifierError || !recs[0].Enforced ||
				recs[0].Transport != telemetry.TransportChannel {
				t.Fatalf("records %+v", recs)
			}
		})
	}
}

// failWith puts rules behind the lane's judgement, with a budget short enough for a test.
func (f *laneFixture) failWith(rules judgement.Rules) {
	l := f.pol.Rules.(local)
	l.Judge.Rules, l.Judge.Budget = rules, 20*time.Millisecond
	f.pol = NewPolicy(f.pol.Cfg, l)
}
