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
		{`python3 -c 'from smolagents import CodeAgent'`, "smolagents"},
		{`python3 -c 'from interpreter import interpreter; interpreter.chat("x")'`, "interpreter"},
		{`python3 -c 'from aider.coders import Coder'`, "aider"},
		{`node -e 'import("@google/gemini-cli-core")'`, "gemini-cli-core"},
		// A name spelled in parts is the whole name: joined by +, side by side, reversed, joined
		// from a list.
		{`node -e 'require("child_process").spawn("co" + "dex", ["exec", "x"])'`, "codex"},
		{`python3 -c 'import subprocess; subprocess.run(["co" "dex", "exec", "x"])'`, "codex"},
		{`python3 -c 'import subprocess; subprocess.run(["xedoc"[::-1], "exec", "x"])'`, "codex"},
		{`python3 -c 'import subprocess; subprocess.run(["".join(["co", "dex"]), "exec", "x"])'`, "codex"},
		{`node -e 'require("child_process").spawn(["co", "dex"].join(""), ["exec", "x"])'`, "codex"},
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
		{`python3 -c 'from interpreters import pool'`, ""},
		{`python3 -c 'import os; os.system("echo '"'"'co'"'"' '"'"'dex'"'"'")'`, ""},
		{`python3 -c 'print("co" "dex is a word")'`, ""},
		{`python3 -c 'import openai; openai.chat.completions.create(model="x", messages=[])'`, ""},
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

// The shell's state carries from statement to statement: a nested Claude Code is judged with
// the environment and the folder it will start with, whatever statement set them.
func TestANestedAgentIsJudgedWithTheEnvironmentAndFolderEarlierStatementsLeft(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	for _, tc := range []struct {
		cmd, why string // why: a word the reason must hold; "" for a call that must pass
	}{
		{"export CLAUDE_CONFIG_DIR=$(mktemp -d); claude -p x", "CLAUDE_CONFIG_DIR"},
		{"unset CLAUDE_CONFIG_DIR; claude -p x", "CLAUDE_CONFIG_DIR"},
		{"CLAUDE_CONFIG_DIR=/tmp/c; claude -p x", "CLAUDE_CONFIG_DIR"},
		{"declare -x CLAUDE_CODE_SIMPLE=1\nclaude -p x", "CLAUDE_CODE_SIMPLE"},
		{"export HOME=/tmp/h && claude -p x", "HOME"},
		{"X=/tmp/c; export CLAUDE_CONFIG_DIR=$X; sh -c 'claude -p x'", "CLAUDE_CONFIG_DIR"},
		{"run() { claude -p x; }; unset CLAUDE_CONFIG_DIR; run", "CLAUDE_CONFIG_DIR"},
		{"cd sub && claude -p x", "sub"},
		{"cd \"$(mktemp -d)\" && claude -p x", "starts in"},
		{"pushd /tmp/w; claude -p x", "/tmp/w"},
		{"env -C sub claude -p x", "sub"},
		{"script -qc 'claude -p x --setting-sources project,local --no-session-persistence' /dev/null", "--setting-sources"},
		{"npx -y @anthropic-ai/claude-code@latest -p x", "fetches"},
		{"bunx @anthropic-ai/claude-code -p x", "fetches"},
		{`python3 -c "import subprocess; subprocess.run(['cl'+'aude', '-p', 'x', '--bare'])"`, "agent"},
		// Look-alikes.
		{"export FOO=1; claude -p x", ""},
		{"export CLAUDE_CONFIG_DIR=/tmp/c; echo done", ""},
		{"cd sub && claude --version", ""},
		{"cd sub && make test; cd .. && claude -p x", ""}, // back in the call's own folder
	} {
		v := c.Evaluate(context.Background(), bashCall(tc.cmd))
		switch {
		case tc.why == "" && v.RuleID == "effect.nested-agent":
			t.Errorf("%q: denied (%s)", tc.cmd, v.Reason)
		case tc.why != "" && (v.Decision != claudehook.Deny || v.RuleID != "effect.nested-agent"):
			t.Errorf("%q: %s %s (%s), want effect.nested-agent", tc.cmd, v.Decision, v.RuleID, v.Reason)
		case tc.why != "" && !strings.Contains(v.Reason, tc.why):
			t.Errorf("%q: the reason %q does not name %q", tc.cmd, v.Reason, tc.why)
		}
	}
}

// In Cowork's VM a nested Claude Code that would inherit the session's hook is refused: the hook
// would come from a settings file the agent can rewrite while it starts. Help and version pass.
func TestANestedClaudeInTheVMIsRefused(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	for _, tc := range []struct {
		cmd  string
		deny bool
	}{
		{"claude -p 'run the tests'", true},
		{"echo hi | claude", true},
		{"claude --version", false},
		{"claude mcp list", false},
	} {
		for _, tool := range []string{"Bash", "mcp__workspace__bash"} {
			v := c.EvaluateCall(context.Background(), Call{Payload: payload(tool, map[string]any{"command": tc.cmd}), InVM: true})
			if got := v.RuleID == "effect.nested-agent"; got != tc.deny {
				t.Errorf("%s %q in the VM: %s %s (%s), want denied %v", tool, tc.cmd, v.Decision, v.RuleID, v.Reason, tc.deny)
			}
		}
	}
	if v := c.EvaluateCall(context.Background(), Call{Payload: bashCall("claude -p x")}); v.RuleID == "effect.nested-agent" {
		t.Errorf("on the Mac, a plain nested claude inherits the managed guard: %s", v.Reason)
	}
	v := c.EvaluateCall(context.Background(), Call{Payload: bashCall("claude -p x"), SessionGuarded: true})
	if v.RuleID != "effect.nested-agent" || !strings.Contains(v.Reason, "session's settings file") {
		t.Errorf("a call the session's own hook handed over starts a claude guarded by a file the agent can rewrite: %s %s", v.RuleID, v.Reason)
	}
}

// On the Mac, a nested Claude Code of a Cowork session inherits the guard only where the guard
// holds the configuration it loads: the session's outputs folder. Started anywhere else (a
// folder an earlier call moved the shell to), it loads that folder's hooks and servers.
func TestANestedClaudeOnTheMacInheritsOnlyInTheSessionsOutputs(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	own := "/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions/a/b/local_1"
	for cwd, deny := range map[string]bool{
		own + "/outputs":     false,
		own + "/outputs/sub": true,
		"/tmp/w":             true,
	} {
		p := bashCall("claude -p 'run the tests'")
		p.Cwd = cwd
		v := c.EvaluateCall(context.Background(), Call{Payload: p, Own: own})
		if got := v.RuleID == "effect.nested-agent"; got != deny {
			t.Errorf("from %s: %s %s (%s), want denied %v", cwd, v.Decision, v.RuleID, v.Reason, deny)
		}
	}
	p := bashCall("claude -p 'run the tests'")
	p.Cwd = "/Users/ada/code/app"
	if v := c.EvaluateCall(context.Background(), Call{Payload: p}); v.RuleID == "effect.nested-agent" {
		t.Errorf("outside Cowork, the user's own project is the user's: %s", v.Reason)
	}
}
