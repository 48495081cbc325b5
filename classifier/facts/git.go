package facts

import (
	"path"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// git runs more than its command line: the repository's hooks for the subcommand, an alias the
// repository's configuration defines, and commands that configuration names (core.fsmonitor,
// core.sshCommand, filter drivers). The repository is taken to be the folder git starts in (its
// -C folder), as an agent's git mostly is; its configuration and hooks are read like any file a
// command runs.

// gitHooks are the hooks each subcommand may run (githooks(5)).
var gitHooks = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"commit":      {"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-rewrite"},
		"merge":       {"pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge"},
		"pull":        {"pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge", "post-checkout", "post-rewrite"},
		"push":        {"pre-push"},
		"checkout":    {"post-checkout"},
		"switch":      {"post-checkout"},
		"rebase":      {"pre-rebase", "post-rewrite", "post-checkout"},
		"am":          {"applypatch-msg", "pre-applypatch", "post-applypatch", "post-rewrite"},
		"cherry-pick": {"prepare-commit-msg", "commit-msg", "post-commit"},
		"revert":      {"prepare-commit-msg", "commit-msg", "post-commit"},
		"gc":          {"pre-auto-gc"},
		"worktree":    {"post-checkout"},
	}
}}

// refHooks are the subcommands that update references, which run reference-transaction.
var refHooks = nameset.Of("commit", "merge", "pull", "push", "checkout", "switch", "rebase", "am", "cherry-pick", "revert",
	"reset", "branch", "tag", "fetch", "stash", "update-ref")

// gitRun reads git's command line: the folder it starts in (-C, joined in order) and its
// subcommand.
func gitRun(args []string) (dir, sub string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" && i+1 < len(args):
			dir = joinDir(dir, args[i+1])
			i++
		case a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" || a == "--exec-path" || a == "--config-env":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return dir, a
		}
	}
	return dir, ""
}

// gitRuns names the files git reads and runs for its subcommand: the repository's configuration
// (RunGitConfig), and the hooks the subcommand runs.
func (w *walker) gitRuns(cmd Command) {
	dir, sub := gitRun(cmd.Args)
	if sub == "" || sub == "help" || sub == "version" {
		return
	}
	at := Command{Dir: joinDir(cmd.Dir, dir)}
	w.run(at, RunFile{Path: ".git/config", Kind: RunGitConfig, Targets: []string{sub}, Optional: true})
	for _, h := range hooksOf(sub) {
		w.run(at, RunFile{Path: ".git/hooks/" + h, Kind: RunExe, Optional: true})
	}
}

func hooksOf(sub string) []string {
	hooks := slices.Clone(gitHooks.Get()[sub])
	if refHooks.Has(sub) {
		hooks = append(hooks, "reference-transaction")
	}
	return hooks
}

// GitConfigCommands is what a repository's configuration makes git run for the subcommand sub:
// the alias of that name (a "!" alias is shell; another is git again), core.fsmonitor,
// core.sshCommand, core.editor and every filter driver's command; and core.hooksPath, the folder
// the hooks are run from instead of .git/hooks ("" when it names none).
func GitConfigCommands(text, sub string) (cmds []string, hooksPath string) {
	for _, kv := range gitConfig(text) {
		key, value := kv[0], kv[1]
		switch {
		case key == "alias."+strings.ToLower(sub):
			if c, ok := strings.CutPrefix(strings.TrimSpace(value), "!"); ok {
				cmds = append(cmds, c)
			} else if value != "" {
				cmds = append(cmds, "git "+value)
			}
		case key == "core.hookspath":
			hooksPath = value
		case key == "core.fsmonitor" && !gitBool(value), key == "core.sshcommand", key == "core.editor",
			strings.HasPrefix(key, "filter.") && (strings.HasSuffix(key, ".clean") || strings.HasSuffix(key, ".smudge") || strings.HasSuffix(key, ".process")):
			cmds = append(cmds, value)
		}
	}
	return cmds, hooksPath
}

func gitBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// maxGitConfigLines bounds the lines of a configuration read.
const maxGitConfigLines = 4096

// gitConfig reads a git configuration file into its keys (section.subsection.name, section and
// name lower-cased as git compares them) and values, quotes and escapes undone, continued lines
// joined, comments dropped.
func gitConfig(text string) [][2]string {
	var out [][2]string
	section := ""
	n := 0
	var pending strings.Builder
	for line := range strings.Lines(text) {
		if n++; n > maxGitConfigLines {
			break
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			pending.WriteString(strings.TrimSuffix(line, `\`))
			continue
		}
		pending.WriteString(line)
		l := strings.TrimSpace(pending.String())
		pending.Reset()
		switch {
		case l == "" || l[0] == '#' || l[0] == ';':
		case l[0] == '[':
			end := strings.IndexByte(l, ']')
			if end < 0 {
				continue
			}
			name, sub, quoted := strings.Cut(l[1:end], " ")
			section = strings.ToLower(strings.TrimSpace(name))
			if quoted {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			if rest := strings.TrimSpace(l[end+1:]); rest != "" && rest[0] != '#' && rest[0] != ';' {
				if k, v := gitKeyValue(rest); k != "" {
					out = append(out, [2]string{section + "." + k, v})
				}
			}
		default:
			if k, v := gitKeyValue(l); k != "" && section != "" {
				out = append(out, [2]string{section + "." + k, v})
			}
		}
	}
	return out
}

// gitKeyValue reads name = value (a name alone is true).
func gitKeyValue(l string) (key, value string) {
	k, v, ok := strings.Cut(l, "=")
	key = strings.ToLower(strings.TrimSpace(k))
	if !ok {
		return key, "true"
	}
	return key, gitValue(strings.TrimSpace(v))
}

// gitValue undoes a value's quotes and escapes and cuts its comment.
func gitValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(v[i])
			}
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// gitConfigRuns analyses what a repository's configuration makes git run, and names the hooks of
// core.hooksPath, when it moves them.
func (w *walker) gitConfigRuns(r RunFile, text string) {
	if len(r.Targets) == 0 {
		return
	}
	cmds, hooksPath := GitConfigCommands(text, r.Targets[0])
	for _, c := range cmds {
		w.a.shell(c, w.depth+1, w.scope())
	}
	if hooksPath == "" {
		return
	}
	repo := path.Dir(path.Dir(r.Path)) // the folder holding .git
	for _, h := range hooksOf(r.Targets[0]) {
		w.run(Command{Dir: repo}, RunFile{Path: path.Join(hooksPath, h), Kind: RunExe, Optional: true})
	}
}
