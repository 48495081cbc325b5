package hosthook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/judgement/judgementtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
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

// The socket door reads nothing of a user's to judge their call: a session's state comes from
// the caller's own worker (asked by the caller's uid, whatever path CLAUDE_CONFIG_DIR names), the
// call's links are followed by that worker, and no file the user can write (a session's settings
// carrying exactly the injector's entry, through an alias or not) makes the door stand aside.
func TestTheSocketAsksOnlyTheCallersWorkerAndNoUserFileMakesItStandAside(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, "Library", "Application Support", "Claude", "local-agent-mode-sessions")
	own := filepath.Join(root, "a", "o", "local_own", ".claude")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := managedconfig.Defaults(managedconfig.Env{GOOS: "linux", Home: home}, managedconfig.Paths{})
	cfg.CoworkEnabled, cfg.Mode, cfg.SessionsRoots = true, managedconfig.Observe, []string{root}
	sv := Serving{Snap: managedconfig.Snapshot{Config: cfg}}
	paths := managedconfig.Paths{StateDir: filepath.Join(home, "state")}
	e, err := hookentry.NewEntry(cfg, filepath.Join(session.ChannelDir(paths.ChannelRoot(), "local_own"), filepath.FromSlash(session.BridgeDir)))
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := hookentry.Merge(nil, e)
	if err := os.WriteFile(filepath.Join(own, "settings.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	cls, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	const uid = 4242
	var asked, resolved []uint32
	c := &Callers{Env: managedconfig.Env{GOOS: "linux"}, Paths: paths,
		Session: func(u uint32, id string) (SessionState, bool) { asked = append(asked, u); return SessionState{}, false },
		Resolve: func(u uint32, p claudehook.Payload) (*judgement.Resolution, error) {
			resolved = append(resolved, u)
			return &judgement.Resolution{Payload: p}, nil
		},
		users: map[uint32]*caller{uid: {hash: sv.Snap.ShortHash(), name: "eve", home: home, cfg: cfg, judge: judgement.Judge{Cfg: cfg, Rules: cls}}}}
	for _, configDir := range []string{own, filepath.Join(root, "a", "o", "local_victim", ".claude"), ""} {
		req := hostsocket.Request{Kind: hostsocket.KindCall, ConfigDir: configDir,
			Payload: json.RawMessage(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`)}
		_, rec, err := c.Answer(context.Background(), uid, req, sv, time.Now())
		if err != nil || rec == nil {
			t.Fatalf("%q: the door stood aside or failed (record %v, %v)", configDir, rec, err)
		}
	}
	if len(asked) != 2 || asked[0] != uid || asked[1] != uid {
		t.Errorf("sessions' state asked of %v; want the caller's worker (uid %d) for each of the two sessions", asked, uid)
	}
	if len(resolved) != 3 {
		t.Errorf("links followed by the caller's worker for %d of 3 calls", len(resolved))
	}
}
