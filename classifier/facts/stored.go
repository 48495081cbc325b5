package facts

import (
	"encoding/json"
	"slices"
	"strings"
)

// Commands stored for later: a string a program keeps and runs at some later call (a git
// setting, an MCP server's command line) is read as the shell command it is, now, so that its
// content is judged rather than the setting's name.

// GitCommandValue reports whether git runs a configuration key's value as a command line.
func GitCommandValue(key, value string) bool {
	key = strings.ToLower(key)
	v := strings.TrimSpace(value)
	switch key {
	case "core.sshcommand", "core.pager", "core.editor", "core.askpass", "sequence.editor", "diff.external",
		"gpg.program", "gpg.ssh.program", "core.gitproxy", "uploadpack.packobjectshook":
		return v != ""
	case "core.fsmonitor":
		return v != "" && v != "true" && v != "false"
	case "credential.helper":
		return strings.HasPrefix(v, "!")
	}
	if strings.HasPrefix(key, "alias.") {
		return strings.HasPrefix(v, "!")
	}
	for _, suffix := range []string{".clean", ".smudge", ".process", ".textconv", ".command", ".driver", ".cmd"} {
		if strings.HasSuffix(key, suffix) && (strings.HasPrefix(key, "filter.") || strings.HasPrefix(key, "diff.") ||
			strings.HasPrefix(key, "merge.") || strings.HasPrefix(key, "difftool.") || strings.HasPrefix(key, "mergetool.")) {
			return true
		}
	}
	return strings.HasPrefix(key, "pager.") && v != "" && v != "true" && v != "false"
}

// gitStoredCommands are the command lines a git invocation stores in its configuration (git
// config KEY VALUE) or runs with for this call (git -c KEY=VALUE).
func gitStoredCommands(cmd *Command) []string {
	var out []string
	add := func(k, v string) {
		if GitCommandValue(k, v) {
			out = append(out, strings.TrimPrefix(strings.TrimSpace(v), "!"))
		}
	}
	for _, kv := range OptionValues(cmd.Args, "-c") {
		k, v, _ := strings.Cut(kv, "=")
		add(k, v)
	}
	ops := Operands(cmd.Args)
	if i := slices.Index(ops, "config"); i >= 0 && i+2 < len(ops) {
		add(ops[i+1], strings.Join(ops[i+2:], " "))
	}
	return out
}

// mcpServerCommand is the command line an agent CLI stores for an MCP server it will start
// (claude|codex|gemini mcp add NAME … -- CMD ARGS, claude mcp add-json NAME '{"command":…}').
func mcpServerCommand(cmd *Command) string {
	switch cmd.Name {
	case "claude", "codex", "gemini":
	default:
		return ""
	}
	ops := Operands(cmd.Args)
	if len(ops) < 3 || ops[0] != "mcp" {
		return ""
	}
	switch ops[1] {
	case "add":
		if i := slices.Index(cmd.Args, "--"); i >= 0 && i+1 < len(cmd.Args) {
			return quoteAll(cmd.Args[i+1:])
		}
		// claude mcp add NAME CMD ARGS…, without --: the words after the name, when the
		// transport is not a URL
		if len(ops) >= 4 && !strings.Contains(ops[3], "://") {
			return quoteAll(ops[3:])
		}
	case "add-json":
		if len(ops) < 4 {
			return ""
		}
		var server struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if json.Unmarshal([]byte(ops[3]), &server) == nil && server.Command != "" {
			return quoteAll(append([]string{server.Command}, server.Args...))
		}
	}
	return ""
}

// StoredCommands are the command lines cmd stores for a program to run later: git settings
// that run commands, an MCP server's command line.
func StoredCommands(cmd *Command) []string {
	out := gitStoredCommands(cmd)
	if cmd.Name != "git" {
		out = nil
	}
	if line := mcpServerCommand(cmd); line != "" {
		out = append(out, line)
	}
	return out
}
