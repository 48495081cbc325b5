package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// runHook runs `coworkbridge hook` as Claude Code would, with extra environment.
func runHook(t testing.TB, m machine, payload []byte, env ...string) (string, int) {
	t.Helper()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "hook")
	cmd.Env = append(m.environ(), env...)
	cmd.Stdin = bytes.NewReader(payload)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func referencePayloads(t *testing.T) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "reference", "payloads", "*.json"))
	if len(files) == 0 {
		cbtest.NoShared(t, "the reference payloads", os.ErrNotExist)
	}
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

func TestHookAnswersEveryReferencePayload(t *testing.T) {
	denied := []string{"03-relative-read.json", "12-cli-2.1.329-read.json", "14-cli-2.1.329-bash.json"}
	for _, mode := range []string{"enforce", "observe"} {
		t.Run(mode, func(t *testing.T) {
			m := newMachine(t)
			m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"`+mode+`"}`)
			payloads := referencePayloads(t)
			for name, data := range payloads {
				out, code := runHook(t, m, data)
				if code != 0 {
					t.Errorf("%s: exit %d; Claude Code would treat it as an error and let the call through", name, code)
				}
				want := ""
				if mode == "enforce" && slices.Contains(denied, name) {
					want = "deny"
				}
				if got := hookAnswer([]byte(out)); got != want {
					t.Errorf("%s: answer %q (%q), want %q", name, got, out, want)
				}
				if want != "" && !strings.HasPrefix(hookReason(t, out), "coworkbridge: rule ") {
					t.Errorf("%s: reason %q", name, hookReason(t, out))
				}
			}
			recs := readRecords(filepath.Join(m.home, "logs", "decisions.jsonl"))
			if len(recs) != len(payloads) {
				t.Fatalf("%d decision log records for %d calls", len(recs), len(payloads))
			}
			for _, r := range recs {
				if r.Transport != "host-hook" || len(r.RID) != 32 || r.Mode != mode || r.Tool == "" || r.Enforced != (mode == "enforce") {
					t.Errorf("record %+v", r)
				}
			}
		})
	}
}

func hookReason(t *testing.T, out string) string {
	t.Helper()
	var o struct {
		H struct {
			R string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	json.Unmarshal([]byte(out), &o)
	return o.H.R
}

func TestHookFailsClosedOnlyInEnforce(t *testing.T) {
	tests := []struct {
		name, config string
		payload      string
		want         string
	}{
		{"garbage payload, enforce", `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, `not json`, "deny"},
		{"empty payload, enforce", `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, ``, "deny"},
		{"garbage payload, observe", `{"version":1,"cowork_enabled":true,"mode":"observe"}`, `not json`, ""},
		{"broken admin rule file, enforce", `{"version":1,"cowork_enabled":true,"mode":"enforce","policy":{"rules_dirs":["RULES"]}}`, `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, "deny"},
		{"broken admin rule file, observe", `{"version":1,"cowork_enabled":true,"mode":"observe","policy":{"rules_dirs":["RULES"]}}`, `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, ""},
		{"switched off", `{"version":1,"cowork_enabled":false,"mode":"enforce"}`, `{"tool_name":"Bash","tool_input":{"command":"rm -rf ~"}}`, ""},
		// A broken file and no good copy: its clear intent decides, as it does for the daemon.
		{"invalid config, no good copy, no clear intent", `{"version":1,"mode":"sometimes"}`, `{"tool_name":"Bash","tool_input":{"command":"rm -rf ~"}}`, ""},
		{"invalid config, no good copy, observe intent", `{"version":1,"cowork_enabled":true,"mode":"observe","hook_timeout":"1x"}`, `{"tool_name":"Bash","tool_input":{"command":"rm -rf ~"}}`, ""},
		{"invalid config, no good copy, enforce intent", `{"version":1,"cowork_enabled":true,"mode":"enforce","hook_timeout":"1x"}`, `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, "deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMachine(t)
			rules := filepath.Join(m.home, "rules")
			os.MkdirAll(rules, 0o700)
			os.WriteFile(filepath.Join(rules, "bash.rules"), []byte("block \"x\"\n  match (unclosed\n"), 0o600)
			m.writeConfig(t, strings.ReplaceAll(tt.config, "RULES", rules))
			out, code := runHook(t, m, []byte(tt.payload))
			if got := hookAnswer([]byte(out)); code != 0 || got != tt.want {
				t.Errorf("exit %d, answer %q (%s), want %q", code, got, out, tt.want)
			}
			if strings.HasPrefix(tt.name, "invalid config") {
				if tt.want == "deny" && !strings.Contains(hookReason(t, out), "config_invalid") {
					t.Errorf("the deny does not name config_invalid: %s", out)
				}
				if log := m.decisionLog(t); !strings.Contains(log, `"rule":"coworkbridge.config-invalid"`) {
					t.Errorf("the call was not recorded as config_invalid: %q", log)
				}
			}
		})
	}
}

func TestHookDefersToACoworkSessionsOwnHookAndToNoLookAlike(t *testing.T) {
	m := newMachine(t)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	sessionDir := filepath.Join(m.sessions, "acct", "org", "local_s1")
	claude := filepath.Join(sessionDir, ".claude")
	os.MkdirAll(claude, 0o700)
	payload := []byte(`{"tool_name":"Bash","tool_input":{"command":"rm -rf ~"}}`)
	if out, _ := runHook(t, m, payload, "CLAUDE_CONFIG_DIR="+claude); hookAnswer([]byte(out)) != "deny" {
		t.Errorf("no session hook: answer %q, want deny", out)
	}
	// The entry the daemon's injector writes into this session.
	cfg := managedconfig.Defaults(managedconfig.Env{GOOS: runtime.GOOS, Home: m.home}, managedconfig.Paths{})
	cfg.Mode, cfg.CoworkEnabled = managedconfig.Enforce, true
	e, err := hookentry.NewEntry(cfg, filepath.Join(m.state, "channel", "local_s1", ".claude", "coworkbridge"))
	if err != nil {
		t.Fatal(err)
	}
	real, _, _ := hookentry.Merge(nil, e)
	os.WriteFile(filepath.Join(claude, "settings.json"), real, 0o600)
	if out, _ := runHook(t, m, payload, "CLAUDE_CONFIG_DIR="+claude); out != "" {
		t.Errorf("with the session's own hook: %q, want nothing (the daemon judges it)", out)
	}
	lookAlike := []byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"# coworkbridge-hook v2 mode=enforce\nexit 0"}]}]}}`)
	fake := filepath.Join(m.home, "elsewhere", ".claude")
	os.MkdirAll(fake, 0o700)
	os.WriteFile(filepath.Join(fake, "settings.json"), real, 0o600)
	for name, dir := range map[string]string{"a folder outside the sessions roots": fake, "a relative path": "x/.claude"} {
		if out, _ := runHook(t, m, payload, "CLAUDE_CONFIG_DIR="+dir); hookAnswer([]byte(out)) != "deny" {
			t.Errorf("%s with our entry: answer %q, want deny", name, out)
		}
	}
	os.WriteFile(filepath.Join(claude, "settings.json"), lookAlike, 0o600)
	if out, _ := runHook(t, m, payload, "CLAUDE_CONFIG_DIR="+claude); hookAnswer([]byte(out)) != "deny" {
		t.Errorf("a neutered look-alike carrying our marker: answer %q, want deny", out)
	}
}

// BenchmarkHookProcess is the host hook as a whole process, as Claude Code starts it on every
// tool call: per-user mode's program (coworkbridge-userhook, what the drop-in runs) and, beside
// it, the whole binary's `coworkbridge hook` (what drop-ins of earlier releases run). Budget: the
// drop-in's at most 4 times a bare `sh -c true`, its package initialisation at most 1 ms. Each
// is built as releases are built, without cgo (a test binary would add the testing package's
// start-up, a cgo build the dynamic loader's), each call is paired with `sh -c true` so that
// both see the same machine, and it reports both medians, their ratio, the hook's p99 and the
// median of 15 runs' package initialisation (GODEBUG=inittrace=1):
//
//	go test ./cmd/coworkbridge -run x -bench HookProcess -benchtime 200x
func BenchmarkHookProcess(b *testing.B) {
	full := cbtest.BuildProgram(b, ".", "coworkbridge", "coworkbridge_dev")
	user := cbtest.BuildProgram(b, "../coworkbridge-userhook", "coworkbridge-userhook", "coworkbridge_dev")
	m := newMachine(b)
	env := append(m.h.Environ(), "HOME="+m.home)
	// A Cowork session under lockdown: the hook also reads the session's quarantine and leaves a
	// receipt in its host channel.
	session := filepath.Join(m.sessions, "acct", "org", "local_bench")
	os.MkdirAll(filepath.Join(session, ".claude"), 0o755)
	os.MkdirAll(filepath.Join(m.state, "channel", "local_bench", ".claude", "coworkbridge"), 0o700)
	for _, tc := range []struct{ name, config, payload, want string }{
		{"allow", `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, `{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}`, ""},
		{"deny", `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, `{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"}}`, `"deny"`},
		{"allow-cowork-lockdown", `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true}`, `{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_b","tool_input":{"command":"git status"}}`, ""},
	} {
		env := env
		if strings.Contains(tc.name, "cowork") {
			env = append(env, "CLAUDE_CONFIG_DIR="+filepath.Join(session, ".claude"))
		}
		for _, p := range []struct {
			name string
			argv []string
		}{{"userhook", []string{user, "--per-user"}}, {"coworkbridge-hook", []string{full, "hook"}}} {
			b.Run(tc.name+"/"+p.name, func(b *testing.B) {
				m.writeConfig(b, tc.config)
				var hook, bare []time.Duration
				for b.Loop() {
					started := time.Now()
					out := runProcess(b, env, []byte(tc.payload), p.argv[0], p.argv[1:]...)
					hook = append(hook, time.Since(started))
					if tc.want == "" && out != "" || !strings.Contains(out, tc.want) {
						b.Fatalf("hook printed %q", out)
					}
					started = time.Now()
					runProcess(b, env, []byte(tc.payload), "/bin/sh", "-c", "true")
					bare = append(bare, time.Since(started))
				}
				slices.Sort(hook)
				slices.Sort(bare)
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
				b.ReportMetric(ms(hook[len(hook)/2]), "p50-ms")
				b.ReportMetric(ms(hook[len(hook)*99/100]), "p99-ms")
				b.ReportMetric(ms(bare[len(bare)/2]), "sh-p50-ms")
				b.ReportMetric(float64(hook[len(hook)/2])/float64(bare[len(bare)/2]), "x-sh")
				b.ReportMetric(initMillis(b, env, p.argv[0]), "init-ms")
			})
		}
	}
}

func runProcess(b *testing.B, env []string, stdin []byte, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Env, cmd.Stdin = env, bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return string(out)
}

// initMillis is the median over 15 runs of the program's package initialisation.
func initMillis(b *testing.B, env []string, bin string) float64 {
	var runs []float64
	for range 15 {
		runs = append(runs, cbtest.InitTrace(b, env, bin, "--version").Millis)
	}
	slices.Sort(runs)
	return runs[len(runs)/2]
}
