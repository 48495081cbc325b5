package hosthook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hookentry"
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
			req := Request{Payload: json.RawMessage(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_ls"}`)}
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
		View: func(u uint32, p claudehook.Payload, session string) View {
			resolved = append(resolved, u)
			if session != "" {
				asked = append(asked, u)
			}
			return View{Resolved: &judgement.Resolution{Payload: p}}
		},
		users: map[uint32]*caller{uid: {hash: sv.Snap.ShortHash(), name: "eve", home: home, cfg: cfg, judge: judgement.Judge{Cfg: cfg, Rules: cls}}}}
	for _, configDir := range []string{own, filepath.Join(root, "a", "o", "local_victim", ".claude"), ""} {
		req := Request{ConfigDir: configDir,
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

// The socket door asks the caller's worker once per call, for the links and the session's state
// together: a session it reports quarantined has its call refused and the receipt handed back;
// one it does not follow is judged as any call; a worker that cannot answer leaves the call
// judged as written, and its record says why.
func TestTheSocketJudgesWithWhatTheWorkerSeesInOneQuestion(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, "sessions")
	own := filepath.Join(root, "a", "o", "local_own", ".claude")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := managedconfig.Defaults(managedconfig.Env{GOOS: "linux", Home: home}, managedconfig.Paths{})
	cfg.CoworkEnabled, cfg.Mode, cfg.SessionsRoots = true, managedconfig.Enforce, []string{root}
	sv := Serving{Snap: managedconfig.Snapshot{Config: cfg}}
	cls, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	const uid = 4242
	for _, tc := range []struct {
		name     string
		view     View
		deny     bool
		receipts int
		note     string
	}{
		{"quarantined", View{Tracked: true, Session: SessionState{Quarantined: "disableAllHooks was set"}}, true, 1, ""},
		{"not followed", View{Session: SessionState{Quarantined: "ignored: not tracked"}}, false, 0, ""},
		{"worker down", View{ResolveErr: errors.New("the worker of eve is not running")}, false, 0, "could not be worked out as the user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asks, receipts int
			v := tc.view
			if v.Tracked {
				v.Session.Judged = func(claudehook.Receipt) { receipts++ }
			}
			c := &Callers{Env: managedconfig.Env{GOOS: "linux"},
				View: func(u uint32, p claudehook.Payload, session string) View {
					asks++
					if u != uid || session != "local_own" {
						t.Errorf("asked uid %d about session %q", u, session)
					}
					return v
				},
				users: map[uint32]*caller{uid: {hash: sv.Snap.ShortHash(), name: "eve", home: home, cfg: cfg, judge: judgement.Judge{Cfg: cfg, Rules: cls}}}}
			req := Request{ConfigDir: own,
				Payload: json.RawMessage(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`)}
			out, rec, err := c.Answer(context.Background(), uid, req, sv, time.Now())
			if err != nil || rec == nil {
				t.Fatalf("answer: record %v, %v", rec, err)
			}
			a, _ := claudehook.ParseOutput(out)
			if (a.Decision == claudehook.Deny) != tc.deny || asks != 1 || receipts != tc.receipts {
				t.Errorf("answer %q after %d questions and %d receipts; want deny %v, one question, %d receipts", out, asks, receipts, tc.deny, tc.receipts)
			}
			if !strings.Contains(rec.Reason, tc.note) {
				t.Errorf("record's reason %q lacks %q", rec.Reason, tc.note)
			}
		})
	}
}
