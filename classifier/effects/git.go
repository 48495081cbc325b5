package effects

import (
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// What a git command line means, as git itself reads it: global options and -c settings before
// the subcommand, aliases those settings define, long options abbreviated (reset --h is
// --hard), options that take a value (push -o --force pushes an option named --force), --help
// anywhere (nothing runs), and -- (what follows are paths, never options).

// GitCall is one git invocation, read.
type GitCall struct {
	sub    string
	opts   []string // the subcommand's options, long ones spelled out in full, "--opt=value" kept
	ops    []string // operands before --
	paths  []string // after --
	config map[string]string
	help   bool
}

// gitGlobalValue are git's global options that take the next word as their value
// (--exec-path and --list-cmds take theirs only after "=").
var gitGlobalValue = nameset.Of("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix")

// gitLong are the long options of the subcommands judged here, to spell out abbreviations.
var gitLong = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"reset":       {"--hard", "--soft", "--mixed", "--merge", "--keep", "--quiet", "--no-quiet", "--patch", "--pathspec-from-file", "--recurse-submodules", "--no-refresh", "--refresh", "--intent-to-add"},
		"push":        {"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune", "--dry-run", "--all", "--tags", "--repo", "--receive-pack", "--exec", "--push-option", "--set-upstream", "--no-verify", "--verify", "--atomic", "--porcelain", "--follow-tags", "--signed", "--quiet", "--verbose", "--progress", "--thin", "--no-thin", "--recurse-submodules", "--ipv4", "--ipv6", "--branches"},
		"clean":       {"--force", "--dry-run", "--interactive", "--quiet", "--exclude", "--no-force"},
		"checkout":    {"--force", "--no-force", "--patch", "--no-patch", "--merge", "--no-merge", "--ours", "--theirs", "--detach", "--no-detach", "--orphan", "--conflict", "--track", "--no-track", "--quiet", "--progress", "--overlay", "--no-overlay", "--pathspec-from-file", "--ignore-other-worktrees", "--recurse-submodules", "--guess", "--no-guess"},
		"switch":      {"--force", "--discard-changes", "--create", "--force-create", "--detach", "--orphan", "--merge", "--conflict", "--track", "--no-track", "--quiet", "--guess", "--no-guess"},
		"restore":     {"--source", "--staged", "--worktree", "--patch", "--ours", "--theirs", "--merge", "--conflict", "--overlay", "--no-overlay", "--quiet", "--progress", "--pathspec-from-file", "--ignore-unmerged", "--recurse-submodules"},
		"gc":          {"--prune", "--no-prune", "--aggressive", "--auto", "--quiet", "--force", "--keep-largest-pack", "--cruft", "--no-cruft"},
		"prune":       {"--expire", "--dry-run", "--verbose", "--progress"},
		"worktree":    {"--force"},
		"reflog":      {"--expire", "--expire-unreachable", "--all", "--dry-run", "--rewrite", "--updateref", "--stale-fix", "--verbose", "--single-worktree"},
		"filter-repo": {"--force", "--dry-run", "--replace-text", "--path", "--invert-paths", "--path-rename", "--analyze", "--refs", "--partial", "--subdirectory-filter", "--to-subdirectory-filter"},
	}
}}

// gitBuiltins are commands an alias cannot hide: git ignores alias.status.
var gitBuiltins = nameset.Of("add", "am", "archive", "bisect", "blame", "branch",
	"checkout", "cherry-pick", "clean", "clone", "commit", "config", "describe",
	"diff", "fetch", "gc", "grep", "init", "log", "merge", "mv", "prune",
	"pull", "push", "rebase", "reflog", "remote", "reset", "restore", "revert",
	"rm", "show", "stash", "status", "switch", "tag", "worktree", "fsck",
	"update-ref", "filter-branch", "submodule", "ls-files", "rev-parse", "help", "version")

// gitValue are the subcommands' options that take the next word as their value.
var gitValue = lazy.Value[map[string]map[string]bool]{Make: func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"push":          {"--repo": true, "--receive-pack": true, "--exec": true, "-o": true, "--push-option": true},
		"clean":         {"-e": true, "--exclude": true},
		"checkout":      {"-b": true, "-B": true, "--orphan": true, "--conflict": true, "--pathspec-from-file": true},
		"switch":        {"-c": true, "-C": true, "--create": true, "--force-create": true, "--orphan": true},
		"restore":       {"-s": true, "--source": true, "--pathspec-from-file": true},
		"reset":         {"--pathspec-from-file": true},
		"filter-repo":   {"--replace-text": true, "--path": true, "--path-rename": true, "--refs": true, "--subdirectory-filter": true, "--to-subdirectory-filter": true, "--path-glob": true, "--path-regex": true, "--replace-message": true},
		"filter-branch": {"--env-filter": true, "--tree-filter": true, "--index-filter": true, "--msg-filter": true, "--commit-filter": true, "--tag-name-filter": true, "--subdirectory-filter": true, "--parent-filter": true, "-d": true, "--original": true, "--state-branch": true, "--setup": true},
	}
}}

// ParseGit reads a git command; ok is false for anything else.
func ParseGit(cmd *facts.Command) (GitCall, bool) {
	if cmd == nil || cmd.Name != "git" {
		return GitCall{}, false
	}
	g := GitCall{config: map[string]string{}}
	args := cmd.Args
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if a == "--help" || a == "-h" {
			g.help = true
		}
		name, value, inline := strings.Cut(a, "=")
		if gitGlobalValue.Has(name) && !inline && i+1 < len(args) {
			i++
			value = args[i]
		}
		if name == "-c" {
			k, v, _ := strings.Cut(value, "=")
			g.config[strings.ToLower(k)] = v
		}
		if strings.HasPrefix(a, "-c") && len(a) > 2 && !strings.HasPrefix(a, "--") { // -ckey=value
			k, v, _ := strings.Cut(a[2:], "=")
			g.config[strings.ToLower(k)] = v
		}
	}
	if i >= len(args) {
		return g, true
	}
	rest := args[i:]
	// An alias the command line defines (git -c alias.wipe='reset --hard' wipe): once, as git does
	// for a non-shell alias.
	if v, ok := g.config["alias."+strings.ToLower(rest[0])]; ok && !gitBuiltins.Has(strings.ToLower(rest[0])) && !strings.HasPrefix(strings.TrimSpace(v), "!") {
		rest = append(strings.Fields(v), rest[1:]...)
	}
	g.sub = strings.ToLower(rest[0]) // a case-insensitive disk finds git-RESET as git-reset
	g.readArgs(rest[1:])
	return g, true
}

func (g *GitCall) readArgs(args []string) {
	values := gitValue.Get()[g.sub]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			g.paths = append(g.paths, args[i+1:]...)
			return
		case a == "--help" || a == "-h":
			g.help = true
		case strings.HasPrefix(a, "--"):
			name, value, inline := strings.Cut(a, "=")
			name = g.spell(strings.ToLower(name))
			if inline {
				g.opts = append(g.opts, name+"="+value)
			} else {
				g.opts = append(g.opts, name)
			}
			if values[name] && !inline {
				i++ // the value, whatever it looks like
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k, r := range a[1:] { // a cluster: -fd, -fb topic
				flag := "-" + string(r)
				g.opts = append(g.opts, flag)
				if values[flag] {
					if k == len(a)-2 {
						i++ // the value is the next word
					}
					break // or the rest of this one
				}
			}
		default:
			g.ops = append(g.ops, a)
		}
	}
}

// spell spells out an abbreviated long option when it is the prefix of exactly one.
func (g *GitCall) spell(name string) string {
	longs := gitLong.Get()[g.sub]
	if slices.Contains(longs, name) {
		return name
	}
	found := ""
	for _, l := range longs {
		if strings.HasPrefix(l, name) {
			if found != "" {
				return name // ambiguous: git refuses it
			}
			found = l
		}
	}
	if found == "" {
		return name
	}
	return found
}

// has reports whether any of the options was given (long ones also as --opt=value).
func (g *GitCall) has(names ...string) bool {
	for _, o := range g.opts {
		name, _, _ := strings.Cut(o, "=")
		if slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// value returns the last value given to a long option as --opt=value.
func (g *GitCall) value(name string) (string, bool) {
	v, ok := "", false
	for _, o := range g.opts {
		if n, val, inline := strings.Cut(o, "="); inline && n == name {
			v, ok = val, true
		}
	}
	return v, ok
}

// last reports which of two opposite options comes last: true for on, false for off or neither.
func (g *GitCall) last(on, off []string) bool {
	state := false
	for _, o := range g.opts {
		name, _, _ := strings.Cut(o, "=")
		switch {
		case slices.Contains(on, name):
			state = true
		case slices.Contains(off, name):
			state = false
		}
	}
	return state
}

// wholeTreeSpec reports a pathspec that names the whole working tree.
func wholeTreeSpec(p string) bool {
	switch strings.TrimSuffix(p, "/") {
	case ".", ":/", "*", ":(top)", ":/*", "./*", ":(glob)**", "**":
		return true
	}
	return false
}

// expiresNow reports an expiry that leaves nothing to recover: now, all, 0.
func expiresNow(v string) bool {
	switch strings.ToLower(strings.Trim(v, `'"`)) {
	case "now", "all", "0", "never-keep", "0.seconds", "0 seconds":
		return true
	}
	return false
}

// GitDiscard tells what a git command throws away for good: "" when nothing, else what; all is
// true when it is all uncommitted work or history (not one path, one branch, one stash).
func GitDiscard(g GitCall) (what string, all bool) {
	if g.help {
		return "", false
	}
	dry := g.has("--dry-run", "-n")
	switch g.sub {
	case "checkout":
		if g.has("--patch", "-p") && !g.last([]string{"--no-patch"}, []string{"--patch", "-p"}) {
			return "", false // interactive
		}
		force := g.has("--force", "-f")
		paths := append(slices.Clone(g.paths), g.ops...)
		switch {
		case slices.ContainsFunc(paths, wholeTreeSpec):
			return "every uncommitted change in the working tree", true
		case force && len(g.paths) == 0:
			return "every uncommitted change (checkout --force)", true
		case len(g.paths) > 0:
			return "uncommitted changes to " + strings.Join(g.paths, " "), false
		case len(g.ops) >= 2 || g.has("--pathspec-from-file"):
			return "uncommitted changes to the files named", false // checkout main a.txt
		case force:
			return "uncommitted changes (checkout --force)", false
		}
	case "reset":
		if g.has("--merge", "--keep") && !g.help {
			return "uncommitted changes (reset --" + map[bool]string{true: "merge", false: "keep"}[g.has("--merge")] + ")", false
		}
	case "switch":
		if g.has("--discard-changes", "--force", "-f") {
			return "every uncommitted change (switch --discard-changes)", true
		}
	case "restore":
		if g.has("--patch", "-p") {
			return "", false
		}
		paths := append(slices.Clone(g.paths), g.ops...)
		worktree := g.has("--worktree", "-W") || !g.has("--staged", "-S")
		switch {
		case worktree && slices.ContainsFunc(paths, wholeTreeSpec):
			return "every uncommitted change in the working tree", true
		case len(paths) > 0:
			return "uncommitted changes to " + strings.Join(paths, " "), false
		}
	case "stash":
		if len(g.ops) > 0 && (g.ops[0] == "clear" || g.ops[0] == "drop") {
			return "stashed work (stash " + g.ops[0] + ")", false
		}
	case "branch":
		if g.has("-D") || g.has("--delete", "-d") && g.has("--force", "-f") {
			return "a branch and its unmerged commits", false
		}
	case "gc":
		if g.has("--no-prune") {
			return "", false
		}
		v, ok := g.value("--prune")
		if ok && expiresNow(v) || !ok && expiresNow(g.config["gc.pruneexpire"]) {
			return "unreachable commits, at once (gc --prune=now)", true
		}
	case "prune":
		v, ok := g.value("--expire")
		if !dry && (ok && expiresNow(v) || !ok && expiresNow(g.config["gc.pruneexpire"])) {
			return "unreachable commits, at once (prune --expire=now)", true
		}
	case "reflog":
		if len(g.ops) == 0 {
			return "", false
		}
		switch g.ops[0] {
		case "expire":
			v, ok := g.value("--expire")
			u, uok := g.value("--expire-unreachable")
			if !dry && (ok && expiresNow(v) || uok && expiresNow(u)) {
				return "the reflog, which is how lost commits are found again", true
			}
			if !dry {
				return "old reflog entries", false
			}
		case "delete":
			return "reflog entries", false
		}
	case "filter-branch":
		if g.has("-f", "--force") {
			return "history, rewritten over its backup (filter-branch -f)", true
		}
		return "history, rewritten (filter-branch)", false
	case "filter-repo":
		if dry || g.has("--analyze") {
			return "", false
		}
		if g.has("--force", "-f") {
			return "history, rewritten without a safety check (filter-repo --force)", true
		}
		return "history, rewritten (filter-repo)", false
	case "push":
		if dry {
			return "", false
		}
		if g.has("--mirror") {
			return "the remote's branches, replaced by this repository's (push --mirror)", true
		}
		if g.has("--delete", "-d", "--prune") || slices.ContainsFunc(g.ops, func(o string) bool { return strings.HasPrefix(o, ":") && len(o) > 1 }) {
			return "branches on the remote", false
		}
	case "worktree":
		if len(g.ops) > 0 && g.ops[0] == "remove" && g.has("--force", "-f") {
			return "uncommitted changes in the worktree removed", false
		}
	case "update-ref":
		if g.has("-d") {
			return "a ref", false
		}
	}
	return "", false
}

// GitResetHard reports a reset that throws away uncommitted work: --hard, as git reads it.
func GitResetHard(g GitCall) bool {
	return g.sub == "reset" && !g.help && g.has("--hard")
}

// GitForcePush reports a push that can overwrite the remote's history: --force or a +refspec.
// A lease on every ref (--force-with-lease with no ref named) still holds under --force: git
// rejects a stale ref first. A lease on named refs leaves the others forced.
func GitForcePush(g GitCall) bool {
	if g.sub != "push" || g.help || g.has("--dry-run", "-n") {
		return false
	}
	if slices.Contains(g.opts, "--force-with-lease") {
		return false
	}
	leased := map[string]bool{}
	for _, o := range g.opts {
		if v, ok := strings.CutPrefix(o, "--force-with-lease="); ok {
			ref, _, _ := strings.Cut(v, ":")
			leased[strings.TrimPrefix(ref, "refs/heads/")] = true
		}
	}
	if g.has("--force", "-f") {
		return true
	}
	return slices.ContainsFunc(g.ops, func(o string) bool {
		ref, ok := strings.CutPrefix(o, "+")
		src, dst, colon := strings.Cut(ref, ":")
		if !colon {
			dst = src
		}
		return ok && ref != "" && !leased[strings.TrimPrefix(dst, "refs/heads/")]
	})
}

// GitForceClean reports a clean that removes untracked files: forced by option or by setting.
func GitForceClean(g GitCall) bool {
	if g.sub != "clean" || g.help || g.has("--dry-run", "-n", "--interactive", "-i") {
		return false
	}
	if g.last([]string{"--force", "-f"}, []string{"--no-force"}) {
		return true
	}
	switch strings.ToLower(g.config["clean.requireforce"]) {
	case "false", "no", "off", "0":
		return true
	}
	return false
}

// gitCleanReach finds a forced clean of the home or the disk (a repository's own folder is
// what clean is for, a folder in the home included): git clean
// removes every untracked file below where it runs, and in a home that is everything not in a
// repository.
func gitCleanReach(cmd *facts.Command, cwd string) []Effect {
	g, ok := ParseGit(cmd)
	if !ok || !GitForceClean(g) {
		return nil
	}
	where := cwd
	if dirs := facts.OptionValues(cmd.Args, "-C"); len(dirs) > 0 {
		where = facts.CanonPath(dirs[len(dirs)-1], cwd)
	}
	targets := append(append([]string(nil), g.ops...), g.paths...)
	if len(targets) == 0 {
		targets = []string{"."}
	}
	var out []Effect
	for _, t := range targets {
		if p := facts.CanonPath(t, where); p == "~" || p == "/" || p == "/Users" || p == "/home" {
			out = append(out, New(EffectDelete, "git", "target", p, "recursive", "", "critical", ""))
		}
	}
	return out
}
