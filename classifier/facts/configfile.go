package facts

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// Configuration files store commands for later, as git settings do: an editor's tasks, a dev
// container's set-up commands, a direnv .envrc, a desktop entry's Exec line, a systemd unit, a
// crontab. ReadConfigFile reads what such a file holds from the content being written, so that
// the commands are judged as the commands they are, and so that a file holding only ordinary
// entries (an ssh host, a PATH line, an editor's tab width) is not refused for its name.

// ConfigFile is what a configuration file being written holds.
type ConfigFile struct {
	// Kind names the format: one of the Config* constants.
	Kind string
	// Commands are the command lines the file makes a program run later, as shell.
	Commands []string
	// Unordinary names the entries that are more than ordinary for the kind (an ssh
	// ProxyCommand, a setting that names a program, an MCP server for another agent): while
	// there is one, the rules on the file's path stand.
	Unordinary []string
}

// Ordinary reports a file whose every entry is ordinary for its kind.
func (f ConfigFile) Ordinary() bool { return len(f.Unordinary) == 0 }

// The kinds of configuration file ReadConfigFile knows.
const (
	ConfigDirenv       = "direnv"        // .envrc: shell, run by direnv on entering the folder once allowed
	ConfigShellRC      = "shell-rc"      // .zshrc and kin: shell, run by every new shell
	ConfigSSH          = "ssh-config"    // ~/.ssh/config
	ConfigKnownHosts   = "known-hosts"   // ~/.ssh/known_hosts
	ConfigEditor       = "editor-config" // .vscode/, .cursor/ JSON settings
	ConfigEditorTasks  = "editor-tasks"  // .vscode/tasks.json
	ConfigEditorLaunch = "editor-launch" // .vscode/launch.json
	ConfigAgentMCP     = "agent-mcp"     // another agent's MCP servers: .vscode/mcp.json, .cursor/mcp.json
	ConfigAgentHooks   = "agent-hooks"   // .cursor/hooks.json
	ConfigAgentRules   = "agent-rules"   // .cursor/rules/: prose an agent reads, judged as instructions
	ConfigDevcontainer = "devcontainer"  // devcontainer.json
	ConfigDesktopEntry = "desktop-entry" // *.desktop
	ConfigSystemdUnit  = "systemd-unit"  // *.service, *.socket
	ConfigCrontab      = "crontab"       // crontab files
	ConfigPodSpec      = "pod-spec"      // Kubernetes manifests: a container's grants (see effects)
	ConfigCompose      = "compose"       // docker compose files: a container's grants (see effects)
	ConfigHookScript   = "hook-script"   // .husky/, .githooks/: a script git runs through core.hooksPath
	ConfigPreCommit    = "pre-commit"    // .pre-commit-config.yaml: its local hooks' entries
	ConfigPackageRC    = "package-rc"    // a project's .npmrc and .yarnrc.yml: what runs scripts, what node loads
	ConfigUnparsed     = "unparsed"      // a known kind whose content did not parse: nothing is ordinary
	maxConfigFileBytes = MaxRunFileBytes // a larger file is not read, and so not ordinary
)

// shellRCName reports the shells' start-up files ReadConfigFile reads (lower-cased base names).
func shellRCName(lower string) bool {
	switch lower {
	case ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin":
		return true
	}
	return false
}

// ReadConfigFile reads the configuration a file at p (canonical, see CanonPath) holds once
// content is written there; false for a file of no kind it knows.
func ReadConfigFile(p, content string) (ConfigFile, bool) {
	kind := configKind(p, content)
	if kind == "" {
		return ConfigFile{}, false
	}
	if len(content) > maxConfigFileBytes {
		return ConfigFile{Kind: ConfigUnparsed, Unordinary: []string{"a file larger than " + strconv.Itoa(maxConfigFileBytes) + " bytes"}}, true
	}
	f, ok := configReader(kind)(content, p)
	if !ok {
		return ConfigFile{Kind: ConfigUnparsed, Unordinary: []string{"content that does not parse as " + kind}}, true
	}
	f.Kind = kind
	return f, true
}

// configReader is the reader of a kind.
func configReader(kind string) func(content, p string) (ConfigFile, bool) {
	switch kind {
	case ConfigDirenv:
		return readEnvrc
	case ConfigShellRC:
		return readShellRC
	case ConfigSSH:
		return readSSHConfig
	case ConfigKnownHosts:
		return readKnownHosts
	case ConfigEditor:
		return readEditorSettings
	case ConfigEditorTasks:
		return readEditorTasks
	case ConfigEditorLaunch:
		return readEditorLaunch
	case ConfigAgentMCP:
		return readAgentMCP
	case ConfigAgentHooks:
		return readAgentHooks
	case ConfigDevcontainer:
		return readDevcontainer
	case ConfigDesktopEntry:
		return readDesktopEntry
	case ConfigSystemdUnit:
		return readSystemdUnit
	case ConfigCrontab:
		return readCrontab
	case ConfigHookScript:
		return func(content, _ string) (ConfigFile, bool) { return ConfigFile{Commands: []string{content}}, true }
	case ConfigPreCommit:
		return readPreCommit
	case ConfigPackageRC:
		return readPackageRC
	}
	// prose (agent rules) and container specs: read elsewhere (the content rules, effects)
	return func(string, string) (ConfigFile, bool) { return ConfigFile{}, true }
}

// podSpecText: a manifest names its API version and kind (read only once both words are there).

// configKind is the kind of configuration file at p, by its name (and, for a manifest, its
// content). String tests, not patterns: it runs for every write, in the host hook's process too.
func configKind(p, content string) string {
	base := path.Base(p)
	lower := strings.ToLower(base)
	slashed := "/" + p
	switch {
	case base == ".envrc":
		return ConfigDirenv
	case shellRCName(lower):
		return ConfigShellRC
	case p == "~/.ssh/config" || strings.HasPrefix(p, "~/.ssh/config.d/"):
		return ConfigSSH
	case p == "~/.ssh/known_hosts" || p == "~/.ssh/known_hosts2":
		return ConfigKnownHosts
	case strings.Contains(slashed, "/.cursor/rules/"):
		return ConfigAgentRules
	case strings.Contains(slashed, "/.vscode/") || strings.Contains(slashed, "/.cursor/") || strings.Contains(slashed, "/.windsurf/"):
		return editorKind(p, base)
	case base == "devcontainer.json" || base == ".devcontainer.json":
		return ConfigDevcontainer
	case strings.HasSuffix(base, ".desktop"):
		return ConfigDesktopEntry
	case strings.HasSuffix(base, ".service") || strings.HasSuffix(base, ".socket"):
		return ConfigSystemdUnit
	case crontabFile(p, lower):
		return ConfigCrontab
	case hookScript(slashed):
		return ConfigHookScript
	case lower == ".pre-commit-config.yaml" || lower == ".pre-commit-config.yml":
		return ConfigPreCommit
	case lower == ".npmrc" || lower == ".yarnrc.yml" || lower == ".yarnrc" || lower == ".pnpmrc":
		return ConfigPackageRC
	case (strings.HasPrefix(lower, "compose") || strings.HasPrefix(lower, "docker-compose")) && (strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".yaml")):
		return ConfigCompose
	case (strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml") || strings.HasSuffix(lower, ".json")) &&
		len(content) <= maxConfigFileBytes && strings.Contains(content, "apiVersion") && strings.Contains(content, "kind") && configPatterns.Get().podSpecText.MatchString(content):
		return ConfigPodSpec
	}
	return ""
}

// hookScript: a file of a project's hooks folder that git runs once core.hooksPath points there
// (husky's, or .githooks), not husky's own helper folder.
func hookScript(slashed string) bool {
	for _, dir := range []string{"/.husky/", "/.githooks/", "/.git-hooks/"} {
		if i := strings.LastIndex(slashed, dir); i >= 0 {
			rest := slashed[i+len(dir):]
			return rest != "" && !strings.HasPrefix(rest, "_/") && !strings.Contains(rest, "/")
		}
	}
	return false
}

// crontabFile: a crontab by name (crontab, *.crontab, *.cron) or by the system's folders for them.
func crontabFile(p, lower string) bool {
	if lower == "crontab" || strings.HasSuffix(lower, ".crontab") || strings.HasSuffix(lower, ".cron") {
		return true
	}
	for _, dir := range []string{"/etc/cron.d/", "/private/etc/cron.d/", "/var/spool/cron/", "/private/var/spool/cron/", "/var/at/", "/private/var/at/", "/usr/lib/cron/tabs/"} {
		if strings.HasPrefix(p, dir) {
			return true
		}
	}
	return false
}

// editorKind: the files of an editor's or agent's project folder, by name; any other JSON there
// is read as settings, and any other file is no kind known (the path's rules stand).
func editorKind(p, base string) string {
	dir := path.Base(path.Dir(p))
	switch {
	case base == "tasks.json":
		return ConfigEditorTasks
	case base == "launch.json":
		return ConfigEditorLaunch
	case base == "mcp.json":
		return ConfigAgentMCP
	case base == "hooks.json" && dir == ".cursor":
		return ConfigAgentHooks
	case strings.HasSuffix(base, ".json") && (dir == ".vscode" || dir == ".cursor" || dir == ".windsurf"):
		return ConfigEditor
	}
	return ""
}

// unordinaryIf appends what to f.Unordinary when cond holds.
func (f *ConfigFile) unordinaryIf(cond bool, what string) {
	if cond && !slices.Contains(f.Unordinary, what) {
		f.Unordinary = append(f.Unordinary, what)
	}
}
