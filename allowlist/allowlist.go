// Package allowlist decides what a Claude Code settings document in a Cowork session may keep.
// A settings file the agent can write must not make the CLI start a program, rewrite a call,
// switch hooks off or talk to another server; rather than repairing the keys known to do that, only
// keys known not to pass, and whatever an admin names in managed.json. A key the schema of the next
// Claude Code release adds is therefore held back until someone decides it is safe.
//
// It only answers questions about names; it does not read or write files (the injector does), and
// it does not know coworkbridge's own hook entry.
package allowlist

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// List is the safe list together with the names an admin allowed. The zero List is the safe list
// alone.
type List struct {
	admin map[string]bool
}

// New returns the safe list extended by admin's names: a top-level key ("statusLine"), a key and
// one member ("env.HTTPS_PROXY", "hooks.Stop", "mcpServers.github").
func New(admin []string) List {
	if len(admin) == 0 {
		return List{}
	}
	l := List{admin: make(map[string]bool, len(admin))}
	for _, n := range admin {
		l.admin[n] = true
	}
	return l
}

// Key reports whether a top-level settings key other than "hooks" and "env" (which are judged
// member by member) may stay.
func (l List) Key(k string) bool { return safeKeys.Has(k) || l.admin[k] }

// Env reports whether settings may hand the variable k to the CLI and its hooks.
func (l List) Env(k string) bool {
	return l.admin["env"] || l.admin["env."+k] || safeEnv.Has(k) && !Dangerous("env."+k)
}

// HookEvent reports whether hooks of another tool may stand under event (PreToolUse included:
// a foreign PreToolUse hook's updatedInput rewrites the call after coworkbridge judged it).
func (l List) HookEvent(event string) bool { return l.admin["hooks"] || l.admin["hooks."+event] }

// MCPServer reports whether an MCP server definition named name may stay (in .mcp.json or a
// settings file's mcpServers).
func (l List) MCPServer(name string) bool {
	return l.admin["mcpServers"] || l.admin["mcpServers."+name]
}

// MCPServerEnv reports whether the definition of the MCP server named server may hand its
// program the variable name: only one the admin named for it ("mcpServers.github.env.GITHUB_TOKEN",
// or "mcpServers.github.env" for any), and never one that changes which program the server's
// command runs or what that program loads (PATH, NODE_OPTIONS, LD_*, DYLD_*, PYTHON*...): an
// allowed command with the agent's PATH is the agent's program.
func (l List) MCPServerEnv(server, name string) bool {
	if LaunchEnv(name) {
		return false
	}
	return l.admin["mcpServers."+server+".env"] || l.admin["mcpServers."+server+".env."+name]
}

// LaunchEnv reports a variable that changes which program a command runs, or what code that
// program loads before its own.
func LaunchEnv(name string) bool {
	u := strings.ToUpper(name)
	if loaderEnv(u) || launchEnv.Has(u) {
		return true
	}
	for _, p := range []string{"PYTHON", "NPM_CONFIG_", "PERL5", "RUBY", "JAVA_", "_JAVA_", "JDK_JAVA_", "GIT_", "BUN_", "DENO_", "UV_", "PIP_"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// launchEnv are LaunchEnv's names beyond loaderEnv's: language runtimes' and package managers'.
var launchEnv = nameset.Of("XDG_CONFIG_HOME", "PERLLIB", "PERLIO", "TCLLIBPATH", "LUA_PATH", "LUA_CPATH", "GEM_HOME", "GEM_PATH",
	"BUNDLE_GEMFILE", "CLASSPATH", "GOFLAGS", "CARGO_HOME", "RUSTC_WRAPPER",
	"COREPACK_NPM_REGISTRY", "YARN_RC_FILENAME", "NPX_CACHE", "PNPM_HOME", "VOLTA_HOME", "NVM_DIR", "ELECTRON_RUN_AS_NODE")

// loaderEnv reports (for an upper-cased name) a variable that decides which program a shell
// runs or what a program loads before its own code: held in any settings' env (dangerousEnv),
// and never handed to an allowed MCP server (LaunchEnv).
func loaderEnv(u string) bool {
	return loaderNames.Has(u) || strings.HasPrefix(u, "LD_") || strings.HasPrefix(u, "DYLD_")
}

var loaderNames = nameset.Of("PATH", "IFS", "ENV", "BASH_ENV", "PROMPT_COMMAND", "ZDOTDIR", "HOME", "SHELL", "TMPDIR",
	"NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS")

// File reports whether the admin allows the configuration file name of a kind ("skills",
// "agents", "commands", "outputStyles") to keep what it holds: "skills" allows every skill,
// "skills.deploy" the skill deploy.
func (l List) File(kind, name string) bool { return l.admin[kind] || l.admin[kind+"."+name] }

// Admits reports whether the admin named name itself (not through the safe list): for entries of
// a configuration folder that are programs, such as "plugins" or "workflows".
func (l List) Admits(name string) bool { return l.admin[name] }

// Dangerous reports whether holding back name (as New takes names) undid something that can start
// a program, rewrite a call, switch hooks off or redirect the CLI: nothing but an attempt on the
// guard puts that into a Cowork session's settings. Other names held back (a key the safe list
// does not know, a harmless variable) are reported but are no attempt.
func Dangerous(name string) bool {
	key, member, _ := strings.Cut(name, ".")
	switch key {
	case "hooks", "mcpServers":
		return true
	case "env":
		return dangerousEnv(member)
	}
	return dangerousKeys.Has(key)
}

// dangerousKeys start a program, load code or switch hooks off (Claude Code's settings
// documentation and the CLI 2.1.329 red team).
var dangerousKeys = nameset.Of(
	"disableAllHooks", "statusLine", "subagentStatusLine", "fileSuggestion", "apiKeyHelper",
	"awsAuthRefresh", "awsCredentialExport", "gcpAuthRefresh", "otelHeadersHelper", "processWrapper",
	"policyHelper", "defaultShell", "enableAllProjectMcpServers", "enabledMcpjsonServers", "mcpServers",
	"managedMcpServers", "enabledPlugins", "extraKnownMarketplaces", "pluginConfigs",
	"autoInstallIdeExtension", "autoConnectIde", "allowedHttpHookUrls", "httpHookAllowedEnvVars",
	"autoMemoryDirectory", "plansDirectory", "sshConfigs",
	// The main thread's agent: its frontmatter hooks and servers start with the session.
	"agent",
	// CLI 2.1.332: where the CLI fetches downloads and its model list from.
	"downloadsMirrorUrl", "modelCatalogUrl",
)

// dangerousEnv reports whether a variable lets settings choose what the CLI or a hook runs, where
// it looks for code, whether hooks run at all, or which server the CLI talks to.
func dangerousEnv(k string) bool {
	u := strings.ToUpper(k)
	return dangerousEnvNames.Has(u) || loaderEnv(u) ||
		strings.HasPrefix(u, "BASH_FUNC_") || strings.Contains(k, "%%") ||
		strings.HasPrefix(u, "ANTHROPIC_") && (strings.HasSuffix(u, "_URL") || strings.Contains(u, "HELPER")) ||
		strings.HasPrefix(u, "OTEL_") || strings.HasPrefix(u, "CLAUDE_CODE_PLUGIN")
}

var dangerousEnvNames = nameset.Of(
	"SHELLOPTS", "BASHOPTS", "PS4", "CDPATH", "GLOBIGNORE", "GCONV_PATH", "LOCPATH", "NLSPATH",
	"HOSTALIASES", "RESOLV_HOST_CONF", "PYTHONPATH", "PYTHONSTARTUP", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB",
	"CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SHELL_PREFIX", "CLAUDE_CODE_SHELL",
	"CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
	"CLAUDE_CODE_SKIP_BEDROCK_AUTH", "CLAUDE_CODE_SKIP_VERTEX_AUTH", "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
	"USE_BUILTIN_RIPGREP", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_TLS_REJECT_UNAUTHORIZED",
	"CLAUDE_CODE_CLIENT_CERT", "CLAUDE_CODE_CLIENT_KEY", "EDITOR", "VISUAL",
)

// safeKeys cannot start a program, rewrite a call, switch hooks off or load code: presentation,
// model choice, the CLI's own permission rules (coworkbridge judges every call whatever they say)
// and switches that only turn features off.
var safeKeys = nameset.Of(
	"$schema", "alwaysThinkingEnabled", "askUserQuestionTimeout", "attribution", "autoCompactEnabled",
	"autoMemoryEnabled", "autoScrollEnabled", "autoUpdatesChannel", "availableModels", "awaySummaryEnabled",
	"axScreenReader", "claudeMdExcludes", "cleanupPeriodDays", "companyAnnouncements", "deniedMcpServers",
	"diffTool", "disableArtifact", "disableAutoMode", "disableBundledSkills", "disableClaudeAiConnectors",
	"disableRemoteControl", "disableSkillShellExecution", "disableWorkflows", "disabledMcpjsonServers",
	"editorMode", "effortLevel", "emojiCompletionEnabled", "externalEditorContext", "fallbackModel",
	"fastMode", "fastModePerSessionOptIn", "feedbackSurveyRate", "fileCheckpointingEnabled",
	"includeCoAuthoredBy", "includeGitInstructions", "language", "minimumVersion", "model",
	"modelOverrides", "advisorModel", "outputStyle", "permissionExplainerEnabled", "permissions",
	"preferredNotifChannel", "prefersReducedMotion", "respectGitignore", "respondToBashCommands",
	"showClearContextOnPlanAccept", "showThinkingSummaries", "showTurnDuration", "skillListingBudgetFraction",
	"skillListingMaxDescChars", "skillOverrides", "skippedMarketplaces", "skippedPlugins", "spinnerTipsEnabled",
	"spinnerTipsOverride", "spinnerVerbs", "syntaxHighlightingDisabled", "teammateDefaultModel", "teammateMode",
	"terminalProgressBarEnabled", "theme", "tui", "useAutoModeDuringPlan", "verbose", "viewMode",
	"vimInsertModeRemaps", "voice", "voiceEnabled", "wheelScrollAccelerationEnabled", "prUrlTemplate",
	"footerLinksRegexes", "workflowSizeGuideline", "workflowKeywordTriggerEnabled",
)

// safeEnv are variables that tune the CLI without choosing code, servers or hooks.
var safeEnv = nameset.Of(
	"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
	"ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL",
	"CLAUDE_CODE_MAX_OUTPUT_TOKENS", "MAX_THINKING_TOKENS", "MAX_MCP_OUTPUT_TOKENS", "BASH_DEFAULT_TIMEOUT_MS",
	"BASH_MAX_TIMEOUT_MS", "BASH_MAX_OUTPUT_LENGTH", "MCP_TIMEOUT", "MCP_TOOL_TIMEOUT",
	"CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR", "DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING",
	"DISABLE_AUTOUPDATER", "DISABLE_BUG_COMMAND", "DISABLE_COST_WARNINGS", "DISABLE_PROMPT_CACHING",
	"DISABLE_NON_ESSENTIAL_MODEL_CALLS", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
	"CLAUDE_CODE_DISABLE_TERMINAL_TITLE", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY", "CLAUDE_CODE_IS_COWORK",
	"LANG", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR", "FORCE_COLOR",
)
