package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/hostsocket"
)

const payload = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`

type echo struct{ got chan hostsocket.Request }

func (e echo) Serve(_ context.Context, _ hostsocket.Peer, r hostsocket.Request) hostsocket.Answer {
	e.got <- r
	return hostsocket.Answer{V: 1, Output: json.RawMessage(`{"from":"daemon"}`)}
}

func serve(t *testing.T) (string, chan hostsocket.Request) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "run", "hook.sock")
	got := make(chan hostsocket.Request, 1)
	s, err := hostsocket.Listen(sock, echo{got}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock, got
}

// standIn is a stand-in for coworkbridge that prints what it was asked and read.
func standIn(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "coworkbridge")
	script := "#!/bin/sh\nprintf '{\"full\":\"%s %s\",\"stdin\":' \"$1\" \"$2\"; cat; printf '}'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(k string) string {
	return map[string]string{"CLAUDE_CONFIG_DIR": "/s/local_a/.claude", "CLAUDE_CODE_HOST_SESSION_ID": "local_a"}[k]
}

func TestTheHookPrintsTheDaemonsAnswerAndNamesItsSession(t *testing.T) {
	sock, got := serve(t)
	looked := false
	out := answer(strings.NewReader(payload+"\n"), env, sock, func() string { looked = true; return "" })
	if string(out) != `{"from":"daemon"}` {
		t.Fatalf("printed %s", out)
	}
	if looked {
		t.Error("the hook looked for the full program on a call the daemon answered")
	}
	r := <-got
	if string(r.Payload) != payload || r.ConfigDir != "/s/local_a/.claude" || r.HostSession != "local_a" {
		t.Fatalf("request %+v", r)
	}
}

func TestWhatTheHookCannotDoGoesToTheFullProgramWithThePayload(t *testing.T) {
	full := standIn(t)
	for name, in := range map[string]string{
		"no daemon":       payload,
		"settings change": `{"hook_event_name":"ConfigChange","source":"project_settings","file_path":"/x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "none.sock")
			if name == "settings change" {
				sock, _ = serve(t) // a daemon is there, and still not asked
			}
			out := answer(strings.NewReader(in), env, sock, func() string { return full })
			var o struct {
				Full  string          `json:"full"`
				Stdin json.RawMessage `json:"stdin"`
			}
			if err := json.Unmarshal(out, &o); err != nil || o.Full != "hook --system" || string(o.Stdin) != in {
				t.Fatalf("printed %s (%v)", out, err)
			}
		})
	}
}

func TestWithNeitherDaemonNorFullProgramTheCallIsDenied(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	out := answer(strings.NewReader(payload), env, filepath.Join(t.TempDir(), "none.sock"), func() string { return missing })
	if !strings.Contains(string(out), `"permissionDecision":"deny"`) || !strings.Contains(string(out), "could not judge it alone") {
		t.Fatalf("printed %s", out)
	}
}

// The release stamp reaches --version, so that an admin can tell which hook a Mac runs; the
// build the tests run carries none and says what Go recorded instead.
func TestVersionSaysTheReleaseOrWhatGoRecorded(t *testing.T) {
	if got := versionString(); got == "" {
		t.Error("no version at all")
	}
	version = "v1.2.3"
	defer func() { version = "" }()
	if got := versionString(); got != "v1.2.3" {
		t.Errorf("version %q, want the stamp", got)
	}
}
