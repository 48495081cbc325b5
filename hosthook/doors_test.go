package hosthook

import (
	"context"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/judgement/judgementtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func TestAFailingEngineAtTheHookIsADenyAndARecord(t *testing.T) {
	for _, e := range []struct {
		name  string
		rules judgement.Rules
	}{{"panics", judgementtest.Panicking{}}, {"hangs", judgementtest.Hanging{}}} {
		t.Run(e.name, func(t *testing.T) {
			cfg := managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce}
			j := Judgement{Judge: judgement.Judge{Cfg: cfg, Rules: e.rules, Budget: 20 * time.Millisecond, Now: time.Now},
				Env: managedconfig.Env{GOOS: "linux", Home: t.TempDir()}, Door: judgement.Hook}
			rec, out := j.Decide(context.Background(), []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`), time.Now())
			if a, err := claudehook.ParseOutput(out); err != nil || a.Decision != claudehook.Deny {
				t.Fatalf("the hook prints %q (%v), want a deny", out, err)
			}
			if rec == nil || rec.Rule != ruleid.ClassifierError || !rec.Enforced || rec.Transport != telemetry.TransportHook || rec.Agent != "claude-code" {
				t.Fatalf("record %+v", rec)
			}
		})
	}
}
