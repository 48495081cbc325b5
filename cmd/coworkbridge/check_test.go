package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckClassifiesOneCall(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("COWORKBRIDGE_STATE_DIR", t.TempDir())
	tests := []struct {
		args  []string
		stdin string
		want  map[string]string
	}{
		{[]string{"--json", "--bash", "git push --force"}, "", map[string]string{"decision": "deny", "rule": "bash.git-push-force", "matched": "git push --force"}},
		{[]string{"--json", "--write", "/Users/ada/.ssh/config"}, "", map[string]string{"decision": "deny", "rule": "path.secrets"}},
		{[]string{"--json", "--bash", "ls"}, "", map[string]string{"decision": "allow", "rule": ""}},
		{[]string{"--json", "-"}, `{"tool_name":"Read","tool_input":{"file_path":"../other/.env"},"cwd":"/p/app"}`, map[string]string{"decision": "deny", "rule": "read.dotenv"}},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), append([]string{"check"}, tt.args...), stdio{in: strings.NewReader(tt.stdin), out: &out, err: &errb}); code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, errb.String())
		}
		var got map[string]string
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%v: %v %q", tt.args, err, out.String())
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%v: %s = %q, want %q", tt.args, k, got[k], v)
			}
		}
	}
}

func TestCheckScoresACorpus(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("COWORKBRIDGE_STATE_DIR", t.TempDir())
	corpus := filepath.Join(t.TempDir(), "c.jsonl")
	os.WriteFile(corpus, []byte(`{"tool":"Bash","command":"rm -rf /","expect":"deny"}
{"tool":"Bash","command":"ls","expect":"allow"}
{"tool":"Bash","command":"sudo ls","expect":"allow"}
{"tool":"Bash","command":"echo hi","expect":"deny","category":"edge_cases"}
{"tool":"(raw_hook_json)","command":"{not json","expect":"allow"}
`), 0o644)
	var out bytes.Buffer
	if code := dispatch(context.Background(), []string{"check", "--corpus", corpus, "--show-misses"}, stdio{in: strings.NewReader(""), out: &out, err: &out}); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	for _, want := range []string{
		"all            rows     5  deny caught    1/2    ( 50.0%, denied  50.0%)  allow blocked    1/3    (33.3%)",
		"scored         rows     4  deny caught    1/1    (100.0%, denied 100.0%)  allow blocked    1/3    (33.3%)",
		`c.jsonl:3 expect allow got deny bash.privilege-escalation: "sudo ls"`,
		"crashes 0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// check --corpus reads a decision log as it reads a labelled corpus: each record is labelled by
// the decision it got, so a candidate policy is scored against a fleet's own traffic.
func TestCheckCorpusScoresADecisionLog(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("COWORKBRIDGE_STATE_DIR", t.TempDir())
	log := filepath.Join(t.TempDir(), "decisions.jsonl")
	os.WriteFile(log, []byte(strings.Join([]string{
		`{"ts":"2026-11-20T10:00:00Z","rid":"a","tool":"Bash","input":{"command":"rm -rf ~"},"decision":"deny","rule":"bash.rm-critical"}`,
		`{"ts":"2026-11-20T10:00:01Z","rid":"b","tool":"Bash","input":{"command":"ls -la"},"decision":"allow"}`,
		`{"ts":"2026-11-20T10:00:02Z","rid":"c","tool":"Read","input":{"file_path":"/p/.env"},"decision":"deny","rule":"read.dotenv"}`,
		`{"ts":"2026-11-20T10:00:03Z","rid":"d","tool":"Bash","input":{"command":"git status"},"decision":"deny","rule":"org.no-git"}`,
	}, "\n")+"\n"), 0o600)
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"check", "--corpus", log, "--show-misses"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "deny caught    2/3") || !strings.Contains(out.String(), "allow blocked    0/1") ||
		!strings.Contains(out.String(), `"git status"`) {
		t.Errorf("scores:\n%s", out.String())
	}
}

// check --settings says what the allow-list of the configuration in force holds of a settings
// file, which of it is an attempt, and what lockdown does with it.
func TestCheckSettingsExplainsTheAllowListAndLockdown(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "managed.json")
	os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"allowed_settings":["env.HTTPS_PROXY"]}`), 0o600)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)
	t.Setenv("COWORKBRIDGE_STATE_DIR", t.TempDir())
	settings := filepath.Join(dir, "settings.json")
	os.WriteFile(settings, []byte(`{"model":"opus","someNewKey":1,"statusLine":{"type":"command","command":"id"},"env":{"HTTPS_PROXY":"http://p","CLAUDE_CODE_SIMPLE":"1"}}`), 0o600)
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"check", "--settings", settings}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != exitHeld {
		t.Fatalf("exit %d, want %d (something is held): %s", code, exitHeld, errb.String())
	}
	for _, want := range []string{
		"kept:     env.HTTPS_PROXY",
		"kept:     model",
		"held:     someNewKey (not on the safe list",
		"held:     statusLine (can start a program",
		"held:     env.CLAUDE_CODE_SIMPLE (can start a program",
		"lockdown: on in managed.json, but this Mac has no drop-in",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, kept := range []string{"held:     model", "held:     env.HTTPS_PROXY"} {
		if strings.Contains(out.String(), kept) {
			t.Errorf("%s:\n%s", kept, out.String())
		}
	}
}

// check --settings on a folder says what the daemon would hold of the CLI's configuration there
// (skills, agents, ...), which of it is an attempt, what allowed_settings admits, and changes
// nothing.
func TestCheckSettingsOnAFolderExplainsWhatWouldBeHeld(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "managed.json")
	os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","allowed_settings":["agents.deploy"]}`), 0o600)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)
	t.Setenv("COWORKBRIDGE_STATE_DIR", t.TempDir())
	project := filepath.Join(dir, "project")
	files := map[string]string{
		".claude/skills/tidy/SKILL.md":       "---\nname: tidy\nhooks:\n  Stop: []\n---\n",
		".claude/agents/deploy.md":           "---\nmcpServers: {}\n---\n",
		".claude/agents/odd.md":              "---\nname: odd\nnewKey: 1\n---\n",
		"outputs/.claude/commands/x.md":      "Run !`id`\n",
		"outputs/.claude/skills/ok/SKILL.md": "---\nname: ok\n---\n",
	}
	for name, content := range files {
		p := filepath.Join(project, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"check", "--settings", project}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != exitHeld {
		t.Fatalf("exit %d, want %d: %s", code, exitHeld, errb.String())
	}
	for _, want := range []string{
		".claude/skills/tidy/SKILL.md: would hold hooks (can start a program",
		".claude/agents/odd.md: would hold newKey (not known to be harmless",
		"outputs/.claude/commands/x.md: would hold whole, inline shell commands (can start a program",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, kept := range []string{"deploy.md", "skills/ok"} {
		if strings.Contains(out.String(), kept) {
			t.Errorf("%s was held:\n%s", kept, out.String())
		}
	}
	for name, content := range files {
		if got, _ := os.ReadFile(filepath.Join(project, filepath.FromSlash(name))); string(got) != content {
			t.Errorf("check changed %s", name)
		}
	}
}

// check names the configuration it judged with, and says when a rule that would have matched
// was switched off or put in observe by it.
func TestCheckNamesItsConfigurationAndTheRulesItHeldBack(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "managed.json")
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	for _, tt := range []struct{ policy, want string }{
		{`{"disabled_rules":["bash.git-push-force"]}`, "note:     rule bash.git-push-force would have decided deny, but policy.disabled_rules switches it off"},
		{`{"rule_modes":{"bash.git-push-force":"observe"}}`, "note:     rule bash.git-push-force decides deny, but policy.rule_modes puts it in observe"},
	} {
		os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","policy":`+tt.policy+`}`), 0o600)
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), []string{"check", "--bash", "git push --force"}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), tt.want) || !strings.Contains(out.String(), "policy:   "+cfg+" (config_hash ") {
			t.Errorf("%s:\n%s", tt.policy, out.String())
		}
	}
}

// A deny under a configuration that applies nothing says so: observe records it, and a file that
// leaves coworkbridge off judges nothing at all.
func TestCheckSaysWhenTheConfigurationAppliesNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "managed.json")
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	for _, tt := range []struct{ config, want string }{
		{`{"version":1,"cowork_enabled":true,"mode":"observe"}`, "mode:     observe: managed.json's mode records this decision and applies nothing"},
		{`{"version":1,"cowork_enabled":false,"mode":"enforce"}`, "mode:     off: managed.json does not switch coworkbridge on"},
		{`{"version":1,"cowork_enabled":true,"mode":"enforce"}`, ""},
	} {
		os.WriteFile(cfg, []byte(tt.config), 0o600)
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), []string{"check", "--bash", "git push --force"}, stdio{in: strings.NewReader(""), out: &out, err: &errb}); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if got := out.String(); tt.want == "" && strings.Contains(got, "mode:") || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s:\n%s", tt.config, got)
		}
	}
}
