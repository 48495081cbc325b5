package allowlist

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Every way the CLI 2.1.329 red team got a program started, a call rewritten or hooks switched off
// through settings: none passes the safe list, and each counts as an attempt.
func TestEverythingThatStartsAProgramOrSwitchesHooksOffIsHeldAndIsAnAttempt(t *testing.T) {
	var l List
	keys := []string{"disableAllHooks", "statusLine", "subagentStatusLine", "fileSuggestion", "apiKeyHelper",
		"awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper", "enableAllProjectMcpServers",
		"enabledMcpjsonServers", "mcpServers", "enabledPlugins", "extraKnownMarketplaces", "processWrapper"}
	for _, k := range keys {
		if l.Key(k) {
			t.Errorf("%s passes the safe list", k)
		}
		if !Dangerous(k) {
			t.Errorf("%s held is not counted as an attempt", k)
		}
	}
	for _, ev := range []string{"PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "ConfigChange"} {
		if l.HookEvent(ev) || !Dangerous("hooks."+ev) {
			t.Errorf("hooks.%s: passes or is no attempt", ev)
		}
	}
	for _, v := range []string{"CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE", "CLAUDE_CODE_PLUGIN_DIRS", "ANTHROPIC_BASE_URL",
		"PATH", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES", "BASH_FUNC_x%%", "NODE_OPTIONS", "CLAUDE_CONFIG_DIR", "SHELLOPTS"} {
		if l.Env(v) || !Dangerous("env."+v) {
			t.Errorf("env %s: passes or is no attempt", v)
		}
	}
}

func TestAnUnknownKeyIsHeldButIsNoAttempt(t *testing.T) {
	var l List
	for _, k := range []string{"someKeyOfTheNextRelease", "hooksV2"} {
		if l.Key(k) || Dangerous(k) {
			t.Errorf("%s: passes=%v attempt=%v, want held and no attempt", k, l.Key(k), Dangerous(k))
		}
	}
	if l.Env("MY_PROJECT_FLAG") || Dangerous("env.MY_PROJECT_FLAG") {
		t.Error("an unknown variable must be held, and is no attempt")
	}
}

func TestAnAdminAllowsByName(t *testing.T) {
	l := New([]string{"statusLine", "env.HTTPS_PROXY", "hooks.Stop", "mcpServers.github"})
	if !l.Key("statusLine") || !l.Env("HTTPS_PROXY") || !l.HookEvent("Stop") || !l.MCPServer("github") {
		t.Error("a name the admin allowed was not passed")
	}
	if l.Key("apiKeyHelper") || l.Env("HTTP_PROXY") || l.HookEvent("PreToolUse") || l.MCPServer("other") {
		t.Error("a name the admin did not allow was passed")
	}
}

// The safe list names only keys Claude Code knows (a typo would pass nothing, but would say the
// list covers what it does not), and none of them is dangerous.
func TestTheSafeListIsMadeOfKnownHarmlessKeys(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "settingsschema", "claude-code-settings.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	for _, k := range safeKeys.Names() {
		if _, ok := schema.Properties[k]; !ok {
			t.Errorf("safe key %s is not in the settings schema", k)
		}
		if Dangerous(k) {
			t.Errorf("safe key %s is also dangerous", k)
		}
	}
	for _, k := range safeEnv.Names() {
		if dangerousEnv(k) {
			t.Errorf("safe variable %s is also dangerous", k)
		}
	}
}
