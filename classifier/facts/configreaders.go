package facts

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazy"
)

// The readers of ReadConfigFile, one per kind. Each reports false for content that is not of its
// format; unknown entries are never ordinary.

// direnvStdlib reports direnv's own functions that only set variables, watch files or log, which
// an .envrc calls as commands: they become no-ops (their words still read, substitutions and all).
func direnvStdlib(word string) bool {
	switch word {
	case "PATH_add", "path_add", "MANPATH_add", "PATH_rm", "path_rm", "watch_file", "watch_dir",
		"log_status", "log_error", "strict_env", "unstrict_env", "has", "use", "layout", "dotenv", "dotenv_if_exists",
		"env_vars_required", "expand_path", "user_rel_path", "find_up", "load_prefix", "semver_search", "on_git_branch",
		"direnv_layout_dir", "direnv_version", "fetchurl":
		return true
	}
	return false
}

// direnvSource reports direnv's functions that load another .envrc: the source they are.
func direnvSource(word string) bool {
	switch word {
	case "source_env", "source_env_if_exists", "source_up", "source_up_if_exists":
		return true
	}
	return false
}

func readEnvrc(content, _ string) (ConfigFile, bool) {
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		word, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		switch {
		case direnvStdlib(word):
			lines[i] = ": " + rest
		case word == "source_url": // fetches a script and runs it
			lines[i] = "curl -fsSL " + rest + " | sh"
		case direnvSource(word):
			lines[i] = "source " + cmpOr(rest, "../.envrc")
		}
	}
	return ConfigFile{Commands: []string{strings.Join(lines, "\n")}}, true
}

func cmpOr(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// rcHookTool reports an environment manager whose shell hook (eval "$(direnv hook zsh)") an rc
// file may run.
func rcHookTool(name string) bool {
	switch name {
	case "direnv", "brew", "starship", "zoxide", "pyenv", "rbenv", "nodenv", "goenv", "mise", "rtx", "fnm":
		return true
	}
	return false
}

// readShellRC: a shell's start-up file is ordinary while every line only extends PATH with the
// user's own or the system's folders, aliases a command (the alias's body is judged as the
// command it is) or hooks a known environment manager (eval "$(direnv hook zsh)"). Anything else
// keeps the file's own rule.
func readShellRC(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case configPatterns.Get().rcPathLine.MatchString(l):
			f.unordinaryIf(!ownPathList(configPatterns.Get().rcPathLine.FindStringSubmatch(l)[3], ":"), l)
		case configPatterns.Get().rcZshPath.MatchString(l):
			f.unordinaryIf(!ownPathList(configPatterns.Get().rcZshPath.FindStringSubmatch(l)[2], " "), l)
		case l == "export PATH" || l == "typeset -U path" || l == "typeset -U PATH path":
		case configPatterns.Get().rcAlias.MatchString(l):
			body := unquoteWord(configPatterns.Get().rcAlias.FindStringSubmatch(l)[2])
			f.unordinaryIf(body == "", l)
			f.Commands = append(f.Commands, body)
		case configPatterns.Get().rcInitHook.MatchString(l):
			f.unordinaryIf(!rcHookTool(path.Base(configPatterns.Get().rcInitHook.FindStringSubmatch(l)[1])), l)
		default:
			f.unordinaryIf(true, l)
		}
	}
	return f, true
}

// ownPathList reports a list of folders (PATH's value) that names only PATH itself, the user's
// own folders and the system's: no substitution, temporary folder or relative folder.
func ownPathList(v, sep string) bool {
	v = strings.Trim(v, `"'`)
	if strings.Contains(v, "$(") || strings.Contains(v, "`") || v == "" {
		return false
	}
	for _, d := range strings.Split(v, sep) {
		d = strings.Trim(d, `"'`)
		if d == "" {
			continue
		}
		if !configPatterns.Get().rcOwnPath.MatchString(d) || configPatterns.Get().rcTempPath.MatchString(d) {
			return false
		}
	}
	return true
}

// unquoteScalar removes the quotes around a whole value ('…' or "…"), and leaves any other as is.
func unquoteScalar(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// unquoteWord undoes one level of shell quoting around a whole word ('…' or "…").
func unquoteWord(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	if strings.ContainsAny(s, " \t'\"") {
		return ""
	}
	return s
}

// sshOrdinary reports whether an ssh_config keyword (lower-cased) with its value only says where
// and as whom to connect and how to keep the connection; known is false for a keyword it does
// not list.
func sshOrdinary(key, v string) (ordinary, known bool) {
	switch key {
	case "host", "hostname", "user", "port", "proxyjump", "identitiesonly", "addkeystoagent", "usekeychain", "compression",
		"serveraliveinterval", "serveralivecountmax", "connecttimeout", "tcpkeepalive", "preferredauthentications",
		"pubkeyauthentication", "passwordauthentication", "kbdinteractiveauthentication", "hostkeyalgorithms",
		"pubkeyacceptedalgorithms", "pubkeyacceptedkeytypes", "kexalgorithms", "ciphers", "macs", "loglevel",
		"hashknownhosts", "updatehostkeys", "visualhostkey", "controlmaster", "controlpersist", "canonicalizehostname",
		"canonicaldomains", "addressfamily", "batchmode":
		return true, true
	case "identityfile", "certificatefile", "userknownhostsfile", "controlpath":
		return sshOwnFile(v), true
	case "forwardagent", "forwardx11":
		return strings.EqualFold(v, "no"), true
	case "stricthostkeychecking":
		return !strings.EqualFold(v, "no") && !strings.EqualFold(v, "off"), true
	case "match":
		return !strings.Contains(strings.ToLower(v), "exec"), true
	}
	return false, false
}

// sshRunsCommand reports the keywords whose value ssh runs as a command line on the local machine.
func sshRunsCommand(key string) bool {
	return key == "proxycommand" || key == "localcommand" || key == "knownhostscommand"
}

// sshOwnFile: a file in the user's own ssh folder.
func sshOwnFile(v string) bool {
	v = strings.Trim(v, `"`)
	return (strings.HasPrefix(v, "~/.ssh/") || strings.HasPrefix(v, "%d/.ssh/")) && !strings.Contains(v, "..")
}

func readSSHConfig(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, value := sshKeyword(l)
		lk := strings.ToLower(key)
		switch {
		case sshRunsCommand(lk):
			f.Commands = append(f.Commands, value)
			f.unordinaryIf(true, key)
		case lk == "match" && strings.Contains(strings.ToLower(value), "exec"):
			if _, cmd, ok := strings.Cut(value, "exec"); ok {
				f.Commands = append(f.Commands, unquoteWord(strings.TrimSpace(cmd)))
			}
			f.unordinaryIf(true, "Match exec")
		default:
			ordinary, known := sshOrdinary(lk, value)
			switch {
			case !known:
				f.unordinaryIf(true, key)
			case !ordinary:
				f.unordinaryIf(true, key+" "+value)
			}
		}
	}
	return f, true
}

// sshKeyword splits "Keyword value" or "Keyword=value".
func sshKeyword(l string) (string, string) {
	i := strings.IndexAny(l, " \t=")
	if i < 0 {
		return l, ""
	}
	return l[:i], strings.TrimSpace(strings.TrimLeft(l[i:], " \t="))
}

// readKnownHosts: host keys are ordinary; a marker (@cert-authority trusts a CA for every host
// it signs, @revoked) is not.
func readKnownHosts(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		fields := strings.Fields(l)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if strings.HasPrefix(fields[0], "@") {
			f.unordinaryIf(true, fields[0])
			continue
		}
		f.unordinaryIf(len(fields) < 3 || !configPatterns.Get().knownHostKey.MatchString(fields[1]), "a line that is not a host key")
	}
	return f, true
}

// editorProgramKey: a setting's name that names a program, a shell, its arguments or environment,
// or a guard of an agent (auto-approval, workspace trust, MCP): a segment of the dotted name.

// readEditorSettings: settings are ordinary unless one names a program to run or switches a
// guard; each such setting is named.
func readEditorSettings(content, _ string) (ConfigFile, bool) {
	v, ok := parseConfigJSON(content)
	if !ok {
		return ConfigFile{}, false
	}
	var f ConfigFile
	walkKeys("", v, func(key string) {
		for seg := range strings.SplitSeq(key, ".") {
			if !strings.ContainsAny(seg, "*/[") && configPatterns.Get().editorProgramKey.MatchString(seg) {
				f.unordinaryIf(true, key)
				return
			}
		}
	})
	sort.Strings(f.Unordinary)
	return f, true
}

// walkKeys calls fn with the dotted name of every leaf of v.
func walkKeys(prefix string, v any, fn func(string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			name := k
			if prefix != "" {
				name = prefix + "." + k
			}
			walkKeys(name, c, fn)
		}
	case []any:
		for _, c := range t {
			walkKeys(prefix, c, fn)
		}
	default:
		fn(prefix)
	}
}

// editorVar replaces an editor's variables in a task's command line with what they stand for,
// as far as the analysis needs: the project folder, an environment variable.

func editorLine(s string) string {
	return configPatterns.Get().editorVar.ReplaceAllStringFunc(s, func(m string) string {
		if name, ok := strings.CutPrefix(m, "${env:"); ok {
			return "$" + strings.TrimSuffix(name, "}")
		}
		return "."
	})
}

func readEditorTasks(content, _ string) (ConfigFile, bool) {
	v, ok := parseConfigJSON(content)
	if !ok {
		return ConfigFile{}, false
	}
	var f ConfigFile
	tasks, _ := v["tasks"].([]any)
	for _, t := range append([]any{v}, tasks...) {
		task, _ := t.(map[string]any)
		for _, scope := range []map[string]any{task, asMap(task["osx"]), asMap(task["linux"]), asMap(task["windows"])} {
			if line := taskLine(scope, task); line != "" {
				f.Commands = append(f.Commands, line)
			}
			if opts := asMap(scope["options"]); opts["shell"] != nil {
				f.unordinaryIf(true, "options.shell")
			}
		}
	}
	return f, true
}

// taskLine is the command line one task (or its platform's part) runs: a shell task's command is
// shell text, a process task's a program; an npm task runs the package's script.
func taskLine(scope, task map[string]any) string {
	if scope == nil {
		return ""
	}
	env := envAssigns(asMap(asMap(scope["options"])["env"]))
	if s, ok := scope["script"].(string); ok && task["type"] == "npm" {
		return env + "npm run " + quoteAll([]string{s})
	}
	cmd := commandWords(scope["command"])
	if cmd == "" {
		return ""
	}
	var args []string
	for _, a := range asSlice(scope["args"]) {
		switch a := a.(type) {
		case string:
			args = append(args, editorLine(a))
		case map[string]any:
			s, _ := a["value"].(string)
			args = append(args, editorLine(s))
		}
	}
	if task["type"] == "process" {
		return env + quoteAll(append([]string{cmd}, args...))
	}
	return strings.TrimSpace(env + cmd + " " + quoteAll(args))
}

// commandWords is a command given as a string (shell text) or a list of words.
func commandWords(v any) string {
	switch c := v.(type) {
	case string:
		return editorLine(c)
	case []any:
		var words []string
		for _, w := range c {
			if s, ok := w.(string); ok {
				words = append(words, editorLine(s))
			}
		}
		return quoteAll(words)
	}
	return ""
}

// envAssigns writes an environment object as the shell's assignments before a command, so that
// the rules on variables that load code judge them.
func envAssigns(env map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !validName(k) {
			continue
		}
		fmt.Fprintf(&b, "%s=%s ", k, quoteAll([]string{fmt.Sprint(env[k])}))
	}
	return b.String()
}

func validName(k string) bool {
	for i, r := range k {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return k != ""
}

// parseConfigJSON reads a configuration file's JSON, or a fragment of one's members as an Edit
// writes it ("editor.rulers": [100],).
func parseConfigJSON(content string) (map[string]any, bool) {
	if v, ok := ParseJSONC(content); ok {
		return v, true
	}
	return ParseJSONC("{" + content + "\n}")
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asSlice(v any) []any        { s, _ := v.([]any); return s }

// readEditorLaunch: a debug configuration runs its runtime (runtimeExecutable with its
// arguments) or a terminal command, with its environment; the program debugged is the project's.
func readEditorLaunch(content, _ string) (ConfigFile, bool) {
	v, ok := parseConfigJSON(content)
	if !ok {
		return ConfigFile{}, false
	}
	var f ConfigFile
	for _, c := range asSlice(v["configurations"]) {
		conf := asMap(c)
		env := envAssigns(asMap(conf["env"]))
		line := commandWords(conf["command"])
		if rt, ok := conf["runtimeExecutable"].(string); ok {
			var args []string
			for _, a := range asSlice(conf["runtimeArgs"]) {
				if s, ok := a.(string); ok {
					args = append(args, editorLine(s))
				}
			}
			line = quoteAll(append([]string{editorLine(rt)}, args...))
		}
		if line == "" && env != "" {
			line = ":" // the environment alone, judged by the rules on variables
		}
		if line != "" {
			f.Commands = append(f.Commands, env+line)
		}
	}
	return f, true
}

// readAgentMCP: every MCP server written into another agent's configuration is new tools for it,
// never ordinary; a local server's command line is judged too.
func readAgentMCP(content, _ string) (ConfigFile, bool) {
	v, ok := parseConfigJSON(content)
	if !ok {
		return ConfigFile{}, false
	}
	var f ConfigFile
	for _, key := range []string{"servers", "mcpServers"} {
		names := slices.Sorted(maps.Keys(asMap(v[key])))
		for _, name := range names {
			srv := asMap(asMap(v[key])[name])
			f.unordinaryIf(true, "MCP server "+name)
			if cmd, ok := srv["command"].(string); ok {
				words := []string{cmd}
				for _, a := range asSlice(srv["args"]) {
					if s, ok := a.(string); ok {
						words = append(words, s)
					}
				}
				f.Commands = append(f.Commands, envAssigns(asMap(srv["env"]))+quoteAll(words))
			}
		}
	}
	return f, true
}

// readAgentHooks: an agent's hooks run at its every step, as a guard would; never ordinary.
func readAgentHooks(content, _ string) (ConfigFile, bool) {
	v, ok := parseConfigJSON(content)
	if !ok {
		return ConfigFile{}, false
	}
	var f ConfigFile
	hooks := asMap(v["hooks"])
	for _, event := range slices.Sorted(maps.Keys(hooks)) {
		f.unordinaryIf(true, "a hook on "+event)
		for _, h := range asSlice(hooks[event]) {
			if line := commandWords(asMap(h)["command"]); line != "" {
				f.Commands = append(f.Commands, line)
			}
		}
	}
	return f, true
}

// devcontainerCommands are the keys whose value the dev container tools run: initializeCommand
// on the host, the others in the container.
var devcontainerCommands = []string{"initializeCommand", "onCreateCommand", "updateContentCommand", "postCreateCommand", "postStartCommand", "postAttachCommand"}

// readDevcontainer: its life-cycle commands, and the container it starts written as the docker
// run it is, so that what it is given of the host is judged as docker run's would be.
func readDevcontainer(content, _ string) (ConfigFile, bool) {
	v, ok := parseConfigJSON(content)
	if !ok {
		return ConfigFile{}, false
	}
	var f ConfigFile
	for _, k := range devcontainerCommands {
		switch c := v[k].(type) {
		case map[string]any: // parallel commands, by name
			for _, name := range slices.Sorted(maps.Keys(c)) {
				if line := commandWords(c[name]); line != "" {
					f.Commands = append(f.Commands, line)
				}
			}
		default:
			if line := commandWords(c); line != "" {
				f.Commands = append(f.Commands, line)
			}
		}
	}
	if run := devcontainerRun(v); run != "" {
		f.Commands = append(f.Commands, run)
	}
	return f, true
}

// devcontainerRun is the docker run a dev container's options amount to; "" when they give the
// container nothing beyond the defaults.
func devcontainerRun(v map[string]any) string {
	var args []string
	for _, a := range asSlice(v["runArgs"]) {
		if s, ok := a.(string); ok {
			args = append(args, s)
		}
	}
	if p, _ := v["privileged"].(bool); p {
		args = append(args, "--privileged")
	}
	for _, c := range asSlice(v["capAdd"]) {
		if s, ok := c.(string); ok {
			args = append(args, "--cap-add", s)
		}
	}
	for _, s := range asSlice(v["securityOpt"]) {
		if s, ok := s.(string); ok {
			args = append(args, "--security-opt", s)
		}
	}
	mounts := asSlice(v["mounts"])
	if wm, ok := v["workspaceMount"].(string); ok {
		mounts = append(mounts, wm)
	}
	for _, m := range mounts {
		switch m := m.(type) {
		case string:
			args = append(args, "--mount", editorLine(m))
		case map[string]any:
			src, _ := m["source"].(string)
			args = append(args, "--mount", "source="+editorLine(src))
		}
	}
	if len(args) == 0 {
		return ""
	}
	return quoteAll(append(append([]string{"docker", "run"}, args...), "devcontainer"))
}

// readDesktopEntry: the Exec lines of a desktop entry and its actions, field codes removed.
func readDesktopEntry(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Exec="); ok {
			v = strings.ReplaceAll(configPatterns.Get().desktopFieldCode.ReplaceAllString(v, ""), "%%", "%")
			if v = strings.TrimSpace(v); v != "" {
				f.Commands = append(f.Commands, v)
			}
		}
	}
	return f, true
}

// systemdExec reports a unit's keys whose value systemd runs.
func systemdExec(key string) bool {
	switch key {
	case "ExecStart", "ExecStartPre", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost", "ExecCondition":
		return true
	}
	return false
}

// readSystemdUnit: the Exec* lines of a unit, their prefixes (@ - : + !) removed.
func readSystemdUnit(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || !systemdExec(strings.TrimSpace(k)) {
			continue
		}
		v = strings.TrimLeft(strings.TrimSpace(v), "@-:+!")
		if v != "" {
			f.Commands = append(f.Commands, v)
		}
	}
	return f, true
}

// cronSpecial reports the schedules cron writes as one word.
func cronSpecial(w string) bool {
	switch w {
	case "@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly":
		return true
	}
	return false
}

// readCrontab: each entry's command, after its schedule (and, in the system's crontabs, its
// user); variable lines are skipped.
func readCrontab(content, p string) (ConfigFile, bool) {
	system := strings.Contains(p, "/etc/cron") || path.Base(p) == "crontab" && strings.HasPrefix(p, "/")
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || cronVariable(l) {
			continue
		}
		fields := strings.Fields(l)
		skip := 5
		if cronSpecial(fields[0]) {
			skip = 1
		}
		if system {
			skip++
		}
		if len(fields) <= skip {
			return ConfigFile{}, false
		}
		f.Commands = append(f.Commands, strings.Join(fields[skip:], " "))
	}
	return f, true
}

// readPreCommit: the entries of a pre-commit configuration's hooks, which pre-commit runs at each
// commit: a local hook's entry is a command line of the project's or the system's.
func readPreCommit(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
		if v, ok := strings.CutPrefix(t, "entry:"); ok {
			if v = unquoteScalar(strings.TrimSpace(v)); v != "" {
				f.Commands = append(f.Commands, v)
			}
		}
	}
	return f, true
}

// readPackageRC: a package manager's project settings that choose the shell its scripts run in,
// the program it runs as itself (yarnPath) or what node loads (node-options, written as the
// variable it becomes, for the rules on variables that load code).
func readPackageRC(content, _ string) (ConfigFile, bool) {
	var f ConfigFile
	for l := range strings.SplitSeq(content, "\n") {
		l = strings.TrimSpace(l)
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			k, v, ok = strings.Cut(l, ":") // .yarnrc.yml
		}
		if !ok || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") {
			continue
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), unquoteScalar(strings.TrimSpace(v))
		switch k {
		case "node-options", "nodeoptions":
			f.Commands = append(f.Commands, "NODE_OPTIONS="+quoteAll([]string{v})+" :")
		case "script-shell", "shell", "git", "editor", "yarnpath", "yarn-path":
			if v != "" {
				f.Commands = append(f.Commands, quoteAll([]string{v}))
			}
		}
	}
	return f, true
}

func cronVariable(l string) bool {
	k, _, ok := strings.Cut(l, "=")
	return ok && validName(strings.TrimSpace(k))
}

// configPatterns are the readers' patterns, compiled together when a configuration file is first
// read: one lazy value at package init, not one per pattern.
var configPatterns = lazy.Value[*configRE]{Make: func() *configRE {
	return &configRE{
		rcPathLine:       regexp.MustCompile(`^(export\s+)?(PATH|MANPATH|INFOPATH)=(.*)$`),
		rcZshPath:        regexp.MustCompile(`^(path|manpath)\+?=\((.*)\)$`),
		rcAlias:          regexp.MustCompile(`^alias\s+([A-Za-z0-9_.:-]+)=(.*)$`),
		rcInitHook:       regexp.MustCompile(`^eval\s+"\$\(\s*([^\s()]+)\s+(hook|init|shellenv|activate|env)(\s+[-a-z]+)*\s*\)"$`),
		rcOwnPath:        regexp.MustCompile(`^(\$\{?PATH\}?|\$\{?path\}?|\$\{?MANPATH\}?|\$\{?INFOPATH\}?|(\$HOME|\$\{HOME\}|~)(/[^$:]*)?|/opt/homebrew/[^$:]*|/usr/local/[^$:]*|/opt/[^$:]*|/usr/(bin|sbin|share/man)|/bin|/sbin|/Library/Apple/usr/bin|/Applications/[^$:]*)$`),
		rcTempPath:       regexp.MustCompile(`(^|/)(tmp|var/tmp|private/tmp|private/var/folders|var/folders|dev/shm)(/|$)|(^|/)\.\.?(/|$)`),
		knownHostKey:     regexp.MustCompile(`^(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+)$`),
		editorProgramKey: regexp.MustCompile(`(?i)path|exec|interpreter|command|cmd|binary|program|runtime|shell|server|tsdk|^home$|^env$|args|hook|script|mcp|trust|approve|proxy|preload|require|loader|plugin|automatic`),
		editorVar:        regexp.MustCompile(`\$\{(workspaceFolder|workspaceRoot|cwd|fileWorkspaceFolder|env:([A-Za-z_][A-Za-z0-9_]*))\}`),
		desktopFieldCode: regexp.MustCompile(`%[fFuUdDnNickvm]`),
		podSpecText:      regexp.MustCompile(`(?m)^\s*"?apiVersion"?\s*:[\s\S]*^\s*"?kind"?\s*:|(?m)^\s*"?kind"?\s*:[\s\S]*^\s*"?apiVersion"?\s*:`),
	}
}}

type configRE struct {
	rcPathLine       *regexp.Regexp
	rcZshPath        *regexp.Regexp
	rcAlias          *regexp.Regexp
	rcInitHook       *regexp.Regexp
	rcOwnPath        *regexp.Regexp
	rcTempPath       *regexp.Regexp
	knownHostKey     *regexp.Regexp
	editorProgramKey *regexp.Regexp
	editorVar        *regexp.Regexp
	desktopFieldCode *regexp.Regexp
	podSpecText      *regexp.Regexp
}
