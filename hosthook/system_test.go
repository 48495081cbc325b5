package hosthook

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

const bashPayload = `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"},"tool_use_id":"toolu_1"}`

// fixed answers every call the same way and remembers the requests.
type fixed struct {
	a    hostsocket.Answer
	reqs chan hostsocket.Request
}

func (f fixed) Serve(_ context.Context, _ hostsocket.Peer, r hostsocket.Request) hostsocket.Answer {
	f.reqs <- r
	return f.a
}

func (m *mac) serve(t *testing.T, h hostsocket.Handler) string {
	t.Helper()
	sock := filepath.Join(m.home, "run", "hook.sock")
	s, err := hostsocket.Listen(sock, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

func TestASystemHookPrintsTheDaemonsAnswerAndSaysWhichSessionItIs(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	deny := json.RawMessage(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"from the daemon"}}`)
	h := fixed{a: hostsocket.Answer{V: 1, Output: deny}, reqs: make(chan hostsocket.Request, 1)}
	sock := m.serve(t, h)
	opts := m.systemOptions(managedconfig.EnvSocket, sock, "CLAUDE_CONFIG_DIR", "/s/local_x/.claude", "CLAUDE_CODE_HOST_SESSION_ID", "local_x")
	out := AnswerSystem(strings.NewReader(bashPayload), opts)
	if string(out) != string(deny) {
		t.Fatalf("printed %s, want the daemon's answer", out)
	}
	r := <-h.reqs
	if r.Kind != hostsocket.KindCall || r.ConfigDir != "/s/local_x/.claude" || r.HostSession != "local_x" || !json.Valid(r.Payload) {
		t.Fatalf("request %+v", r)
	}
}

func TestASystemHookWithoutItsDaemon(t *testing.T) {
	notice := `"block_message":{"text":"Example Corp's AI policy stopped this."}`
	cases := []struct {
		name, config string
		wantDecision string
		wantDropped  int
	}{
		{"enforce denies with the organisation's notice", `{"version":1,"cowork_enabled":true,"mode":"enforce",` + notice + `}`, "deny", 0},
		{"observe lets the call be and drops its record", `{"version":1,"cowork_enabled":true,"mode":"observe",` + notice + `}`, "", 1},
		{"off does nothing", `{"version":1,"cowork_enabled":false}`, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMac(t, c.config)
			drops := filepath.Join(m.home, "system", "dropbox")
			if err := os.MkdirAll(drops, 0o700); err != nil {
				t.Fatal(err)
			}
			opts := m.systemOptions(managedconfig.EnvSocket, filepath.Join(m.home, "run", "none.sock"),
				managedconfig.EnvStateDir, filepath.Join(m.home, "system", "state"))
			out := AnswerSystem(strings.NewReader(bashPayload), opts)
			if got := answer(out); got != c.wantDecision {
				t.Fatalf("decision %q, want %q (%s)", got, c.wantDecision, out)
			}
			if c.wantDecision == "deny" && (!strings.Contains(string(out), "Example Corp") || !strings.Contains(string(out), "daemon could not judge")) {
				t.Errorf("the deny lost the notice or the reason: %s", out)
			}
			entries, _ := os.ReadDir(drops)
			if len(entries) != c.wantDropped {
				t.Fatalf("%d records dropped, want %d", len(entries), c.wantDropped)
			}
			if c.wantDropped == 1 {
				var rec telemetry.Record
				data, _ := os.ReadFile(filepath.Join(drops, entries[0].Name()))
				if err := json.Unmarshal(data, &rec); err != nil || rec.Rule != "bash.git-push-force" || !strings.Contains(rec.Reason, "judged by the hook alone") {
					t.Errorf("dropped record %+v (%v)", rec, err)
				}
			}
		})
	}
}

func TestASystemHookDeniesInEnforceWhenTheDaemonIsTooSlow(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the hook's deadline")
	}
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	h := fixed{a: hostsocket.Answer{V: 1}, reqs: make(chan hostsocket.Request)} // never taken: Serve blocks
	sock := m.serve(t, h)
	opts := m.systemOptions(managedconfig.EnvSocket, sock)
	now := time.Now()
	opts.Now = func() time.Time { return now.Add(-SystemWait + 200*time.Millisecond) } // the deadline is near
	out := AnswerSystem(strings.NewReader(bashPayload), opts)
	go func() { <-h.reqs }()
	if answer(out) != "deny" {
		t.Fatalf("a daemon that did not answer in time: %s", out)
	}
}

// With its daemon unreachable, a system hook that cannot read managed.json, or finds none,
// cannot know that coworkbridge is off: it denies rather than take "off" for granted. (As root,
// which CI is, a 0600 file of another user cannot be made unreadable; a file under a file fails
// the read the same way, and the hook sees one error as any other.)
func TestASystemHookWithoutItsDaemonDeniesWhenItCannotReadTheConfiguration(t *testing.T) {
	for _, c := range []struct {
		name string
		path func(m *mac) string
	}{
		{"none at all", func(m *mac) string { return filepath.Join(m.home, "absent", "managed.json") }},
		{"one that cannot be read", func(m *mac) string { return filepath.Join(m.config, "managed.json") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`)
			opts := m.systemOptions(managedconfig.EnvSocket, filepath.Join(m.home, "run", "none.sock"),
				managedconfig.EnvStateDir, filepath.Join(m.home, "system", "state"), managedconfig.EnvManagedConfig, c.path(m))
			out := AnswerSystem(strings.NewReader(bashPayload), opts)
			if answer(out) != "deny" || !strings.Contains(string(out), "daemon could not judge") {
				t.Fatalf("printed %s, want a deny that says why", out)
			}
		})
	}
}

// A system hook given no way to reach the daemon (AskDaemon nil) judges as it does when the
// daemon cannot be reached: denied in enforce, and the deny says why.
func TestASystemHookWithNoWayToTheDaemonJudgesAsWithoutIt(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	opts := m.options(true, managedconfig.EnvStateDir, filepath.Join(m.home, "system", "state"))
	out := AnswerSystem(strings.NewReader(bashPayload), opts)
	if answer(out) != "deny" || !strings.Contains(string(out), "cannot reach the daemon") {
		t.Fatalf("printed %s, want a deny that says why", out)
	}
}

// systemOptions are the options of a system-mode hook that reaches the daemon over the socket,
// as cmd/coworkbridge's does.
func (m *mac) systemOptions(extra ...string) Options {
	opts := m.options(true, extra...)
	opts.AskDaemon = func(socket string, r Request, deadline time.Time) (DaemonAnswer, error) {
		a, err := hostsocket.Call(socket, hostsocket.Request{Kind: hostsocket.KindCall, Payload: r.Payload,
			ConfigDir: r.ConfigDir, HostSession: r.HostSession}, deadline)
		return DaemonAnswer{Off: a.Off, Output: a.Output}, err
	}
	return opts
}
