package effects

import (
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazy"
)

// An agent started by the agent (EffectAgent) runs tool calls of its own. Only a Claude Code that
// reads the session's configuration carries the session's hook into them (inherits); any other
// agent, or a Claude Code told to read other settings, runs calls no hook of the session judges
// (unguarded, and why).

// agentProgram is an agent's command-line program: the first arguments that make it only print
// or manage itself (help, version, log-in, its server lists), rather than run a task.
type agentProgram struct {
	manage []string
}

var helpVersion = []string{"--help", "-h", "--version", "-v", "-V", "help", "version"}

// agentPrograms are the agent CLIs that run tools of their own (shell commands, file edits) on
// the machine they run on.
var agentPrograms = lazy.Value[map[string]agentProgram]{Make: func() map[string]agentProgram {
	return map[string]agentProgram{
		"claude":       {manage: []string{"plugin", "plugins", "mcp", "config", "doctor", "update", "install", "migrate-installer", "setup-token", "plugin", "auth"}},
		"codex":        {manage: []string{"plugin", "plugins", "login", "logout", "completion", "mcp", "apply", "features"}},
		"gemini":       {manage: []string{"plugin", "plugins", "extensions", "mcp"}},
		"qwen":         {manage: []string{"plugin", "plugins", "extensions", "mcp"}},
		"cursor-agent": {manage: []string{"plugin", "plugins", "login", "logout", "status", "update", "ls", "mcp"}},
		"copilot":      {manage: []string{"plugin", "plugins", "login", "logout"}},
		"aider":        {manage: []string{"plugin", "plugins", "--list-models", "--models"}},
		"goose":        {manage: []string{"plugin", "plugins", "configure", "info", "update", "mcp", "completion"}},
		"opencode":     {manage: []string{"plugin", "plugins", "auth", "models", "upgrade", "mcp", "stats"}},
		"amp":          {manage: []string{"plugin", "plugins", "login", "logout", "mcp", "threads"}},
		"crush":        {manage: []string{"plugin", "plugins", "logs", "update-providers"}},
		"droid":        {manage: []string{"plugin", "plugins", "mcp"}},
	}
}}

// agentPackages are the packages a package runner starts each agent from.
var agentPackages = lazy.Value[map[string]string]{Make: func() map[string]string {
	return map[string]string{
		"@anthropic-ai/claude-code": "claude", "@openai/codex": "codex", "@google/gemini-cli": "gemini",
		"@qwen-code/qwen-code": "qwen", "@github/copilot": "copilot", "aider-chat": "aider",
		"opencode-ai": "opencode", "@sourcegraph/amp": "amp", "@charmland/crush": "crush",
	}
}}

// packageRunners start a package's program: the runner and the subcommand it takes, if any.
var packageRunners = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"npx": nil, "bunx": nil, "uvx": nil, "pnpx": nil,
		"pnpm": {"dlx", "exec"}, "yarn": {"dlx", "exec"}, "npm": {"exec", "x"}, "bun": {"x"},
		"pipx": {"run"}, "uv": {"tool"},
	}
}}

// agentOf names the agent cmd starts, and the arguments it gives it; "" when it starts none.
func agentOf(cmd *facts.Command) (string, []string) {
	if _, ok := agentPrograms.Get()[cmd.Name]; ok {
		return cmd.Name, cmd.Args
	}
	if subs, ok := packageRunners.Get()[cmd.Name]; ok {
		args := cmd.Args
		if len(subs) > 0 {
			i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
			if i < 0 || !slices.Contains(subs, args[i]) {
				return "", nil
			}
			args = args[i+1:]
			if cmd.Name == "uv" && len(args) > 0 && args[0] == "run" {
				args = args[1:]
			}
		}
		for i, a := range args {
			if a == "--" || strings.HasPrefix(a, "-") {
				continue
			}
			if name := agentPackages.Get()[packageName(a)]; name != "" {
				return name, args[i+1:]
			}
			return "", nil // the first operand is the package: another one
		}
	}
	if cmd.Name == "node" || cmd.Name == "bun" || cmd.Name == "deno" {
		for i, a := range cmd.Args {
			if strings.Contains(a, "claude-code/cli") || strings.Contains(a, "claude-code/sdk") {
				return "claude", cmd.Args[i+1:]
			}
		}
	}
	return "", nil
}

// taskFlags hand an agent its task on the command line, operand or not.
var taskFlags = []string{"-p", "--print", "--prompt", "-x", "--execute", "-m", "--message", "--message-file", "-t", "--text", "-i", "--instructions"}

// runsTask reports whether an agent's invocation runs a task: a prompt or a subcommand, a flag
// that hands one over, or input piped in. Help and version anywhere, and the program's own
// management commands first, run none; nor does a bare invocation, which waits for a terminal.
func runsTask(cmd *facts.Command, name string, args []string) bool {
	if slices.ContainsFunc(args, func(a string) bool { return slices.Contains(helpVersion, a) && strings.HasPrefix(a, "-") }) {
		return false
	}
	ops := facts.Operands(args)
	if len(ops) > 0 && (slices.Contains(agentPrograms.Get()[name].manage, ops[0]) || slices.Contains(helpVersion, ops[0])) {
		return false
	}
	return len(ops) > 0 || cmd.PipedFrom != "" || slices.ContainsFunc(args, func(a string) bool {
		flag, _, _ := strings.Cut(a, "=")
		return slices.Contains(taskFlags, flag)
	})
}

// packageName is a package operand less its version: @scope/name@1.2 is @scope/name.
func packageName(a string) string {
	if i := strings.LastIndexByte(a, '@'); i > 0 {
		return a[:i]
	}
	if i := strings.Index(a, "=="); i > 0 { // pipx run aider-chat==0.80
		return a[:i]
	}
	return a
}

// agentEffects is the agent cmd starts, if any.
func agentEffects(cmd *facts.Command) []Effect {
	name, args := agentOf(cmd)
	if name == "" {
		return nil
	}
	if !runsTask(cmd, name, args) {
		return nil // it prints or manages itself, or waits for a terminal it does not have
	}
	why := "it runs tools of its own, which no hook of this session judges"
	if name == "claude" {
		why = claudeUnguarded(cmd, args)
		if _, runner := packageRunners.Get()[cmd.Name]; why == "" && runner {
			why = cmd.Name + " fetches a Claude Code release at run time, which the guard has not vetted: settings keys it does not know are not held"
		}
		if why == "" {
			return []Effect{New(EffectAgent, cmd.Name, "program", name, "inherits", "")}
		}
	}
	return []Effect{New(EffectAgent, cmd.Name, "program", name, "unguarded", "", "why", why)}
}

// claudeUnguarded says which option or variable makes a nested Claude Code leave the session's
// hook behind: "" when it reads the session's configuration as the session's own CLI does.
func claudeUnguarded(cmd *facts.Command, args []string) string {
	if d := cmd.Dir; d != "" && d != "." {
		return "it starts in " + d + " and loads that folder's own configuration (hooks, MCP servers, skills), which the guard does not hold"
	}
	for _, a := range slices.Concat(cmd.Env, cmd.Assigns) {
		name, value, _ := strings.Cut(a, "=")
		switch name {
		case "CLAUDE_CONFIG_DIR":
			return "CLAUDE_CONFIG_DIR points it at another configuration folder, without the session's hook"
		case "CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE":
			if value != "" && value != "0" && value != "false" {
				return name + " switches every settings hook off, the session's included"
			}
		case "CLAUDE_CODE_PLUGIN_DIRS":
			return name + " loads plugins the session does not hold"
		case "HOME", "XDG_CONFIG_HOME":
			return name + " moves the configuration it reads, without the session's hook"
		}
	}
	if cmd.ClearsEnv || slices.Contains(cmd.Unsets, "CLAUDE_CONFIG_DIR") {
		return "env takes CLAUDE_CONFIG_DIR away, so it reads another configuration folder, without the session's hook"
	}
	if srcs := facts.OptionValues(args, "--setting-sources"); len(srcs) > 0 {
		for _, s := range srcs {
			if !slices.Contains(strings.Split(s, ","), "user") {
				return "--setting-sources " + s + " leaves out the user settings, where the session's hook stands"
			}
		}
	}
	for _, o := range []struct{ opt, why string }{
		{"--settings", "--settings adds a settings file the session does not hold, which can switch hooks off"},
		{"--mcp-config", "--mcp-config starts MCP servers the session does not hold"},
		{"--strict-mcp-config", "--strict-mcp-config starts MCP servers the session does not hold"},
		{"--plugin-dir", "--plugin-dir loads plugins the session does not hold"},
		{"--agents", "--agents defines agents, with hooks and servers, the session does not hold"},
		{"--bare", "--bare switches every settings hook off, the session's included"},
		{"--safe-mode", "--safe-mode switches every settings hook off, the session's included"},
		{"--dangerously-skip-permissions", "--dangerously-skip-permissions skips the CLI's own permission rules"},
		{"--allow-dangerously-skip-permissions", "--allow-dangerously-skip-permissions lets it skip the CLI's own permission rules"},
	} {
		if hasOption(args, o.opt) {
			return o.why
		}
	}
	for _, m := range facts.OptionValues(args, "--permission-mode") {
		if m == "bypassPermissions" {
			return "--permission-mode bypassPermissions skips the CLI's own permission rules"
		}
	}
	return ""
}

// hasOption reports whether args give the option opt, alone or as opt=value.
func hasOption(args []string, opt string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == opt || strings.HasPrefix(a, opt+"=") })
}

// codeAgent is the agent interpreter code starts: through an agent SDK (which by default loads no
// settings file at all, so no hook), or by spawning an agent's program.
func codeAgent(ce facts.CodeAct) Effect {
	why := "it runs tools of its own, which no hook of this session judges"
	switch {
	case strings.HasPrefix(ce.Target, "sdk:"):
		why = "the agent SDK (" + strings.TrimPrefix(ce.Target, "sdk:") + ") starts Claude Code with the options the code chooses and, by default, no settings file: no hook"
	case ce.Target == "claude" && !ce.Secret:
		return New(EffectAgent, ce.By, "program", "claude", "inherits", "")
	case ce.Target == "claude":
		why = "the code gives it options that leave the session's hook behind (settings sources, settings, MCP configuration, another configuration folder, or hooks off)"
	}
	return New(EffectAgent, ce.By, "program", strings.TrimPrefix(ce.Target, "sdk:"), "unguarded", "", "why", why)
}
