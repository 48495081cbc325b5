package hosthook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/judgement/judgementtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func TestAFailingEngineAtTheHookIsADenyAndARecord(t *testing.T) {
	for _, e := range judgementtest.Failing() {
		t.Run(e.Name, func(t *testing.T) {
			cfg := managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce}
			j := Judgement{Judge: judgement.Judge{Cfg: cfg, Rules: e.Rules, Budget: 20 * time.Millisecond, Now: time.Now},
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

func TestAFailingEngineAtTheSocketIsADenyAndARecord(t *testing.T) {
	for _, e := range judgementtest.Failing() {
		t.Run(e.Name, func(t *testing.T) {
			sv := Serving{Snap: managedconfig.Snapshot{Config: managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce}}}
			cfg := sv.Snap.Config
			c := &Callers{Env: managedconfig.Env{GOOS: "linux"}, users: map[uint32]*caller{7: {hash: sv.Snap.ShortHash(), name: "ada",
				home: t.TempDir(), cfg: cfg, judge: judgement.Judge{Cfg: cfg, Rules: e.Rules, Budget: 20 * time.Millisecond}}}}
			req := hostsocket.Request{Kind: hostsocket.KindCall, Payload: json.RawMessage(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_ls"}`)}
			out, rec, err := c.Answer(context.Background(), 7, req, sv, time.Now())
			if a, perr := claudehook.ParseOutput(out); err != nil || perr != nil || a.Decision != claudehook.Deny {
				t.Fatalf("answer %q (%v, %v), want a deny", out, err, perr)
			}
			if rec == nil || rec.Rule != ruleid.ClassifierError || rec.Decision != claudehook.Deny || !rec.Enforced || rec.User != "ada" ||
				rec.Transport != telemetry.TransportSocket || rec.ToolUseID != "toolu_ls" {
				t.Errorf("record %+v", rec)
			}
		})
	}
}
