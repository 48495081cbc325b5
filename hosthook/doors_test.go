package hosthook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
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

// A user who links a folder above their sessions root to another user's cannot pass the other
// user's session off as their own at the socket: the call is judged as one from no session, so
// it neither reads nor feeds that session's state (nor makes the hook stand aside for it).
func TestTheSocketTakesASessionForTheCallersOnlyThroughRealFoldersOfTheirs(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, "Library", "Application Support", "Claude", "local-agent-mode-sessions")
	own := filepath.Join(root, "a", "o", "local_own")
	victim := filepath.Join(t.TempDir(), "Claude")
	for _, d := range []string{filepath.Join(own, ".claude"), filepath.Join(victim, "local-agent-mode-sessions", "a", "o", "local_v", ".claude")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	alias := filepath.Join(home, "Library", "Application Support", "Claude-3p")
	if err := os.Symlink(victim, alias); err != nil {
		t.Fatal(err)
	}
	sv := Serving{Snap: managedconfig.Snapshot{Config: managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Observe}}}
	cfg := sv.Snap.Config
	cfg.SessionsRoots = []string{root, filepath.Join(alias, "local-agent-mode-sessions")}
	cls, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	uid := uint32(os.Getuid())
	c := &Callers{Env: managedconfig.Env{GOOS: "linux"}, Session: func(_ uint32, id string) (SessionState, bool) { asked = append(asked, id); return SessionState{}, true },
		users: map[uint32]*caller{uid: {hash: sv.Snap.ShortHash(), name: "eve", home: home, cfg: cfg, judge: judgement.Judge{Cfg: cfg, Rules: cls}}}}
	call := func(configDir string) *telemetry.Record {
		req := hostsocket.Request{Kind: hostsocket.KindCall, ConfigDir: configDir,
			Payload: json.RawMessage(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`)}
		_, rec, err := c.Answer(context.Background(), uid, req, sv, time.Now())
		if err != nil || rec == nil {
			t.Fatalf("answer: %v, record %v", err, rec)
		}
		return rec
	}
	if rec := call(filepath.Join(own, ".claude")); len(asked) != 1 || asked[0] != "local_own" || rec.Reason != "" {
		t.Fatalf("the caller's own session: asked %v, reason %q", asked, rec.Reason)
	}
	rec := call(filepath.Join(alias, "local-agent-mode-sessions", "a", "o", "local_v", ".claude"))
	if len(asked) != 1 {
		t.Errorf("the other user's session was taken for the caller's: asked %v", asked)
	}
	if !strings.Contains(rec.Reason, "names no session of the caller's own") {
		t.Errorf("the record does not say why: %q", rec.Reason)
	}
}
