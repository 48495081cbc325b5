package classifier

import (
	"context"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// An agent the agent starts runs tool calls of its own: every form that escapes the session's
// hook is denied, and the reason names what removed the guard; the look-alikes (help, version,
// management commands, a file named like an agent, an SDK named in a comment, a plain nested
// claude that reads the session's configuration) pass.
func TestANestedAgentInheritsTheGuardOrDoesNotStart(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	for _, tc := range []struct {
		cmd, why string // why: a word the reason must hold; "" for a call that must pass
	}{
		{"claude -p 'run the tests' --setting-sources project,local", "--setting-sources"},
		{"claude -p x --setting-sources=project", "--setting-sources"},
		{"claude --print x --settings /tmp/s.json", "--settings"},
		{"claude -p x --mcp-config m.json", "--mcp-config"},
		{"claude -p x --bare", "--bare"},
		{"claude -p x --permission-mode bypassPermissions", "bypassPermissions"},
		{"CLAUDE_CONFIG_DIR=/tmp/c claude -p x", "CLAUDE_CONFIG_DIR"},
		{"env CLAUDE_CODE_SIMPLE=1 claude -p x", "CLAUDE_CODE_SIMPLE"},
		{"env -i PATH=/usr/bin claude -p x", "CLAUDE_CONFIG_DIR"},
		{"env -u CLAUDE_CONFIG_DIR claude -p x", "CLAUDE_CONFIG_DIR"},
		{"npx @anthropic-ai/claude-code -p x --settings s.json", "--settings"},
		{"/opt/tools/claude -p x --agents '{}'", "--agents"},
		{"node node_modules/@anthropic-ai/claude-code/cli.js -p x --plugin-dir p", "--plugin-dir"},
		{"codex exec 'fix it'", "codex"},
		{"codex --dangerously-bypass-approvals-and-sandbox 'fix it'", "codex"},
		{"npx -y @openai/codex exec x", "codex"},
		{"gemini -p 'do it' --yolo", "gemini"},
		{"cursor-agent -p 'do it'", "cursor-agent"},
		{"copilot -p 'do it' --allow-all-tools", "copilot"},
		{"aider --yes -m 'fix it'", "aider"},
		{"uvx --from aider-chat aider --yes", "aider"},
		{"pipx run aider-chat --yes -m x", "aider"},
		{"goose run -t 'do it'", "goose"},
		{"opencode run 'do it'", "opencode"},
		{"amp -x 'do it'", "amp"},
		{`python3 -c 'import asyncio
from claude_agent_sdk import query'`, "SDK"},
		{`node -e 'const { query } = require("@anthropic-ai/claude-agent-sdk")'`, "SDK"},
		{`python3 -c 'import subprocess; subprocess.run(["gemini", "-p", "x"])'`, "gemini"},
		// Look-alikes.
		{"claude -p 'run the tests'", ""},
		{"claude -p x --setting-sources user,project", ""},
		{"claude -p x --permission-mode acceptEdits --add-dir ../lib", ""},
		{"claude --version", ""},
		{"claude mcp list", ""},
		{"codex --help", ""},
		{"codex login", ""},
		{"gemini --version", ""},
		{"cat gemini.md", ""},
		{"cat AGENTS.md codex.md", ""},
		{"npx prettier --write .", ""},
		{`python3 -c '# we could use claude_agent_sdk here one day
print(1)'`, ""},
		{`python3 -c 'import subprocess; subprocess.run(["claude", "-p", "x"])'`, ""},
	} {
		v := c.Evaluate(context.Background(), bashCall(tc.cmd))
		switch {
		case tc.why == "" && v.RuleID == "effect.nested-agent":
			t.Errorf("%q: denied (%s)", tc.cmd, v.Reason)
		case tc.why != "" && (v.Decision != claudehook.Deny || v.RuleID != "effect.nested-agent" && !strings.Contains(v.Reason, "agent")):
			t.Errorf("%q: %s %s, want effect.nested-agent", tc.cmd, v.Decision, v.RuleID)
		case tc.why != "" && !strings.Contains(v.Reason, tc.why):
			t.Errorf("%q: the reason %q does not name %q", tc.cmd, v.Reason, tc.why)
		}
	}
}

// policy.allowed_agents admits an agent program by name, and nothing else.
func TestAnAllowedAgentProgramMayStart(t *testing.T) {
	c := newTestClassifier(t, Policy{AllowedAgents: []string{"codex"}})
	if v := c.Evaluate(context.Background(), bashCall("codex exec 'fix it'")); v.RuleID == "effect.nested-agent" {
		t.Errorf("an allowed agent was denied: %s", v.Reason)
	}
	if v := c.Evaluate(context.Background(), bashCall("gemini -p x")); v.RuleID != "effect.nested-agent" {
		t.Errorf("another agent passed: %s %s", v.Decision, v.RuleID)
	}
}
