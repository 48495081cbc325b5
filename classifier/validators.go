package classifier

import (
	"path"

	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/frontmatter"
	"github.com/coworkbridge/coworkbridge/internal/lazy"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// check is a validator: what it found, and whether the rule naming it matches.
type check = func(c *Classifier, it item) (string, bool)

// validators are checks too structural for a regular expression. Rule files name them with
// `validator <Name>`; they are compiled in, never loaded at run time.
var validators = lazy.Value[map[string]check]{Make: func() map[string]check {
	return map[string]check{
		"RecursiveDeleteCritical": func(_ *Classifier, it item) (string, bool) { return recursiveDelete(it, true) },
		"RecursiveDelete":         func(_ *Classifier, it item) (string, bool) { return recursiveDelete(it, false) },
		"DownloadToShell":         downloadToShell,
		"DangerousEnv":            dangerousEnv,
		"Exfiltration":            exfiltration,
		"RedirectOutsideProject":  redirectOutsideProject,
		"DynamicCode":             dynamicCode,
		"Unparseable":             unparseable,
		"AnalysisLimit":           analysisLimit,
		"GuardTamper":             guardTamper,
		"PrivilegeEscalation":     privilegeEscalation,
		"ManifestDependencies":    manifestDependencies,
		"DynamicDestructive":      dynamicDestructive,
		"Obfuscated":              obfuscated,
		"ShellMetacharacters":     shellMetacharacters,
		"GitResetHard":            gitValidator(effects.GitResetHard),
		"GitForcePush":            gitValidator(effects.GitForcePush),
		"GitForceClean":           gitValidator(effects.GitForceClean),
		"GitDiscardAll":           gitDiscardValidator(true),
		"GitDiscardPart":          gitDiscardValidator(false),
		"ForkBomb": func(_ *Classifier, it item) (string, bool) {
			return "a process that copies itself without end", it.cmd == nil && it.an != nil && it.an.ForkBomb
		},
		"DotenvOutsideProject": dotenvOutsideProject,
		"GuardPlace":           guardPlace,
		"OtherSession":         otherSession,
		"SearchDisk":           searchDisk,
		"HomeBuiltPath":        homeBuiltPath,
		"ShellEscape":          shellEscape,
		"AppPlace":             appPlace,
		"DotenvWrite":          dotenvWrite,
		"ConfigSurfaceWrite":   configSurfaceWrite,
		"NestedAgent":          nestedAgent,
		"UnreadProgram":        unreadProgram,
		"KillProtected":        killProtected,
		"UnknownReach":         unknownReach,
		"DotenvInProject": func(_ *Classifier, it item) (string, bool) {
			return it.text, effects.IsDotenv(it.text) && inProject(it.text, it.project)
		},
		"MCPServerNotAllowed": func(c *Classifier, it item) (string, bool) {
			return it.server, c.mcpOn && !c.mcpAllow[it.server]
		},
	}
}}

func validatorNames() map[string]bool {
	m := map[string]bool{embeddedCommandValidator: true}
	for k := range validators.Get() {
		m[k] = true
	}
	return m
}

// embeddedCommandValidator judges instruction text with the whole classifier, rules and
// validators included, so it stands outside the table it would otherwise refer back to.
const embeddedCommandValidator = "EmbeddedCommand"

// validator is the validator a rule names.
func validator(name string) func(c *Classifier, it item) (string, bool) {
	if name == embeddedCommandValidator {
		return embeddedCommand
	}
	return validators.Get()[name]
}

// tempRoot is a temporary folder itself, not a path inside one.
var tempRoot = lazyregexp.New(`^/(tmp|var/tmp|private/tmp|private/var/tmp)/?$`)

// regenerated are a project's caches, which the next run makes again: deleting them loses
// nothing. Build outputs and installed packages (build, dist, node_modules) are asked about:
// some projects keep what they cannot rebuild there.
var regenerated = lazyregexp.New(`^(\./)?([^/]+/)*(\.next|\.nuxt|\.svelte-kit|\.turbo|\.parcel-cache|\.pytest_cache|\.mypy_cache|\.ruff_cache|__pycache__|\.expo)/?$`)

// recursiveDelete finds rm -r: critical targets (the root, a home, system folders, .., *) when
// critical is set, any other target that is not temporary otherwise.
func recursiveDelete(it item, critical bool) (string, bool) {
	cmd := it.cmd
	if cmd == nil || cmd.Name != "rm" {
		return "", false
	}
	recursive := false
	var targets []string
	opts := true
	for _, a := range cmd.Args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && (a == "--recursive" || a == "-r" || a == "-R"):
			recursive = true
		case opts && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR"):
			recursive = true
		case opts && strings.HasPrefix(a, "-"):
		default:
			targets = append(targets, a)
		}
	}
	if !recursive || slices.Contains(cmd.Args, "--help") || slices.Contains(cmd.Args, "--version") {
		return "", false // rm --help removes nothing
	}
	if len(targets) == 0 && slices.Contains(cmd.Wrappers, "xargs") && !critical {
		return cmd.Line(), true // the targets come from stdin: unknown, so asked about
	}
	for _, t := range targets {
		p := facts.CanonPath(t, "")
		if slices.Contains(cmd.Globs, t) && globsCritical(p) {
			if critical {
				return cmd.Line() + " (" + t + " matches a system folder)", true
			}
			continue
		}
		if runRoot.MatchString(p) {
			if critical {
				return cmd.Line(), true // the running system's sockets and locks
			}
			continue
		}
		if effects.TempPath(p) && !tempRoot.MatchString(p) && !strings.Contains(t, "..") {
			continue // inside a temporary folder; the folder itself (rm -rf /tmp) is asked about
		}
		if !critical && regenerated.MatchString(t) && !strings.Contains(t, "..") && !strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "~") {
			continue // a build's output or a cache in the project: the next build makes it again
		}
		if effects.CriticalPath(p) == critical {
			return cmd.Line(), true
		}
	}
	return "", false
}

var runRoot = lazyregexp.New(`^/(run|var/run|private/var/run)/?$`)

// systemFolders are what a pattern in rm's arguments is matched against: the shell expands it
// against the disk, and these are what it would find there that matter most.
var systemFolders = []string{"/", "/etc", "/usr", "/var", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/opt", "/System",
	"/Library", "/Applications", "/Users", "/home", "/root", "/private", "/dev", "/tmp", "/run", "/proc", "/sys", "/Volumes",
	"/usr/bin", "/usr/lib", "/usr/local", "/var/lib", "/var/log", "/private/etc", "/private/var"}

// globsCritical reports a pattern that matches a system folder: /et?, /et[c], /u*.
func globsCritical(pattern string) bool {
	for _, d := range systemFolders {
		if ok, _ := path.Match(pattern, d); ok {
			return true
		}
	}
	return false
}

// privilegeEscalation finds commands run as another user: sudo, doas, su, pkexec, or a wrapper
// chain that contains them.
func privilegeEscalation(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil {
		return "", false
	}
	for _, w := range cmd.Wrappers {
		if w == "sudo" || w == "doas" {
			return w + " " + cmd.Line(), true
		}
	}
	switch cmd.Name {
	case "sudo", "doas", "su", "pkexec", "runuser", "sudoedit":
		return cmd.Line(), true
	}
	return "", false
}

// downloadToShell finds text from the network or a decoder run as code: curl … | sh,
// base64 -d | bash, sh -c "$(curl …)", bash <(wget -O- …).
func downloadToShell(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil || !(facts.IsShell(cmd.Name) || facts.InterpreterFlag(cmd.Name) != "" || cmd.Name == "source" || cmd.Name == ".") {
		return "", false
	}
	if facts.NoExec(cmd) {
		return "", false // bash -n reads without running
	}
	codeFlag := "-c"
	if f := facts.InterpreterFlag(cmd.Name); f != "" {
		codeFlag = f
	}
	code, hasCode := facts.FlagValue(cmd.Args, codeFlag)
	if hasCode && slices.Contains(cmd.Wrappers, "xargs") && (strings.Contains(code, "{}") || code == "--" || code == "$@") {
		hasCode = false // xargs sh -c '{}': the code is each input line
	}
	ops := slices.DeleteFunc(facts.Operands(shellArgs(cmd.Args)), func(o string) bool { return strings.HasPrefix(o, "+") }) // set +n and the like
	if !hasCode && len(ops) > 0 && ops[0] != "-" && !slices.Contains(cmd.Wrappers, "xargs") &&
		!strings.HasPrefix(ops[0], "/dev/fd/") && !facts.IsFDPath(ops[0]) && ops[0] != "/dev/stdin" && !strings.Contains(ops[0], "$(...)") {
		return "", false // bash script.sh: the code is the script, not what the pipe brings
	}
	if !hasCode {
		for i, up := range cmd.Upstream {
			if facts.IsDownloader(up) && (i >= len(cmd.UpstreamCmds) || facts.ProducesCode(&cmd.UpstreamCmds[i])) {
				return up + " | … | " + cmd.Line(), true
			}
		}
	}
	fetched := false
	for _, c := range it.an.Commands {
		if c.Name == "curl" || c.Name == "wget" || c.Name == "fetch" || c.Name == "http" || c.Name == "xh" {
			fetched = true
		}
	}
	if fetched && !hasCode && slices.ContainsFunc(cmd.UpstreamCmds, func(u facts.Command) bool { return slices.Contains(u.Args, "/dev/fd/63") }) {
		return cmd.Line(), true // cat <(curl …) | sh: the download reaches the pipe by another way
	}
	if fetched {
		for _, a := range cmd.Args {
			if strings.Contains(a, "$(...)") || a == "/dev/fd/63" {
				return cmd.Line(), true
			}
		}
	}
	return "", false
}

// shellArgs drops the values of a shell's -o/+o options (bash -euo pipefail), which are no script.
func shellArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if (strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "o") && i+1 < len(args) {
			i++
		}
	}
	return out
}

// codeLoaders are variables that, set at all, make the programs reading them load a library or
// run a command: whatever their value, they decide what runs.
var codeLoaders = nameset.Of("LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES",
	"BASH_ENV", "ENV", "PROMPT_COMMAND", "ZDOTDIR", "PYTHONSTARTUP", "PERL5OPT",
	"RUBYOPT", "PYTHONINSPECT", "PERL5DB", "LESSOPEN", "LESSCLOSE")

// searchPaths are lists of folders programs take code from: they load code from where the agent
// can drop it unseen when one of their folders is a temporary one (PATH=/tmp:$PATH), or one
// only known at run time.
var searchPaths = nameset.Of("PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH",
	"DYLD_FRAMEWORK_PATH", "DYLD_FALLBACK_LIBRARY_PATH", "PYTHONPATH", "PERL5LIB",
	"NODE_PATH", "RUBYLIB", "CLASSPATH", "GEM_PATH")

// optionLoaders carry a program's options, some of which load code (node --require X, java
// -javaagent:X) or open a debugger to the network (--inspect).
var optionLoaders = lazy.Value[map[string]*lazyregexp.Regexp]{Make: func() map[string]*lazyregexp.Regexp {
	return map[string]*lazyregexp.Regexp{
		"NODE_OPTIONS":      lazyregexp.New(`(^|\s)(-r|--require|--import|--loader|--experimental-loader)[=\s]+(\S+)|--inspect`),
		"JAVA_TOOL_OPTIONS": javaAgents,
		"_JAVA_OPTIONS":     javaAgents,
		"JDK_JAVA_OPTIONS":  javaAgents,
	}
}}

var javaAgents = lazyregexp.New(`-(javaagent|agentpath|agentlib):(\S+)|()()`)

// loadsCode reports whether setting a variable to a value makes programs load code the project
// does not hold: a preload or a start-up command (any value), a search path through a
// temporary folder or an unknown one, an option that loads a module from outside the project or
// opens a debugger. PYTHONPATH=. and NODE_OPTIONS=--max-old-space-size=4096 are ordinary work.
func loadsCode(name, value, cwd string) bool {
	switch {
	case value == "":
		return false // cleared, or set to nothing
	case codeLoaders.Has(name):
		return true
	case searchPaths.Has(name):
		for _, dir := range strings.Split(value, ":") {
			if strings.Contains(dir, "$(") || strings.Contains(dir, "`") || effects.TempPath(facts.CanonPath(dir, cwd)) {
				return true
			}
		}
	case optionLoaders.Get()[name] != nil:
		for _, m := range optionLoaders.Get()[name].FindAllStringSubmatch(value, -1) {
			mod := m[len(m)-1]
			if mod == "" || strings.HasPrefix(mod, "/") || strings.HasPrefix(mod, "~") || strings.HasPrefix(mod, "..") || strings.Contains(mod, "$") {
				return true // --inspect, or a module outside the project
			}
		}
	}
	return false
}

// dangerousEnv finds variables set to make other programs load code (see loadsCode): for one
// command, or for the rest of the script (export, declare, a bare assignment).
func dangerousEnv(_ *Classifier, it item) (string, bool) {
	var assigns []string
	if it.cmd != nil {
		assigns = it.cmd.Assigns
		if it.cmd.Name == "export" || it.cmd.Name == "declare" || it.cmd.Name == "typeset" {
			assigns = append(assigns, it.cmd.Args...)
		}
	} else if it.an != nil {
		assigns = it.an.Assigns
	}
	for _, a := range assigns {
		if name, value, ok := strings.Cut(a, "="); ok && loadsCode(name, strings.Trim(value, `"'`), it.cwd) {
			return a, true
		}
	}
	return "", false
}

// exfiltration finds data leaving the machine that no effect rule weighs: secrets named in
// request data (a variable, a substitution). Files and standard input sent by curl, wget, scp,
// rsync, nc or ssh are effects (send data=file:..., secret when what they carry is one).
func exfiltration(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil {
		return "", false
	}
	switch cmd.Name {
	case "curl", "wget":
		for _, opt := range effects.DataOptions(cmd.Name) {
			for _, v := range facts.OptionValues(cmd.Args, opt) {
				if effects.MentionsSecretVar(v) || strings.Contains(v, "$(...)") {
					return cmd.Line(), true
				}
			}
		}
	}
	if cmd.PipedFrom != "" && effects.MentionsSecretVar(strings.Join(cmd.Args, " ")) && (cmd.Name == "curl" || cmd.Name == "wget") {
		return cmd.Line(), true
	}
	return "", false
}

// dynamicDestructive finds a program named by a variable or substitution run with the arguments
// of a destructive command (-rf, a critical path): "$TOOL" -rf /. Whatever the analysis thinks the
// variable holds, a command built to hide its name and aimed at the system is no accident.
func dynamicDestructive(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil || !cmd.FromVar {
		return "", false
	}
	force, critical := false, false
	for _, a := range cmd.Args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rRf") {
			force = true
		}
		if effects.CriticalPath(facts.CanonPath(a, it.cwd)) && a != "." && a != ".." {
			critical = true
		}
	}
	if force && critical {
		return cmd.Line(), true
	}
	return "", false
}

// redirectOutsideProject finds shell output written outside the working folder and temp folders.
func redirectOutsideProject(_ *Classifier, it item) (string, bool) {
	if it.cmd != nil || it.an == nil || it.cwd == "" {
		return "", false
	}
	roots := projectRoots(facts.CanonPath(it.cwd, ""))
	for _, w := range it.an.Writes {
		p := facts.CanonPath(w, it.cwd)
		if slices.ContainsFunc(roots, func(r string) bool { return p == r || strings.HasPrefix(p, r+"/") }) ||
			effects.TempPath(p) || strings.HasPrefix(p, "$") || it.an.WritesOrdinaryConfig(w, p) {
			continue
		}
		return w, true
	}
	return "", false
}

// noProject are working folders that hold more than a project: the disk, homes, a home's
// standard folders, system folders.
// noProject reports a working folder that is no project's: the disk, a home, ~/Library and the
// hidden folders of a home and what they hold, the home's common folders, a system folder and
// its direct subfolders. String tests, not a pattern: the host hook is a process per call, and
// compiling a pattern cost more than the call's judgement (noProjectPattern in the tests is the
// specification it is held to).
func noProject(p string) bool {
	return noProjectFolder(p) || strings.HasSuffix(p, "/") && noProjectFolder(p[:len(p)-1])
}

func noProjectFolder(p string) bool {
	switch p {
	case "/", "~", "/Users", "/home", "~/Library", "~/Documents", "~/Desktop", "~/Downloads":
		return true
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		first, below, deeper := strings.Cut(rest, "/")
		if first == "Library" || len(first) > 1 && first[0] == '.' {
			return !deeper || !strings.Contains(below, "\n") // what follows is `.*`, which stops at a newline
		}
		return false
	}
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		first, below, deeper := strings.Cut(rest, "/")
		return noProjectSystem.Has(first) && (!deeper || below != "" && !strings.Contains(below, "/"))
	}
	return false
}

var noProjectSystem = nameset.Of("etc", "usr", "var", "bin", "sbin", "System", "Library", "Applications", "private", "opt", "tmp")

// projectOf is the folders a session working in cwd works in (see projectRoots), none when the
// working folder is a home, the disk or a system folder. Evaluate computes it once per call.
func projectOf(cwd string) []string {
	if cwd == "" {
		return nil
	}
	cwd = facts.CanonPath(cwd, "")
	if noProject(cwd) {
		return nil
	}
	return projectRoots(cwd)
}

// inProject reports whether a path lies in one of the project's folders.
func inProject(p string, project []string) bool {
	return slices.ContainsFunc(project, func(r string) bool { return p == r || strings.HasPrefix(p, r+"/") })
}

// dotenvOutsideProject finds an environment file read outside the project the session works
// in: another project's, the home folder's. A project's own .env is the agent's to read for its
// work; what leaves the machine from it is judged as a secret all the same (the flows ask
// secretPath, which knows no project).
func dotenvOutsideProject(_ *Classifier, it item) (string, bool) {
	if !effects.IsDotenv(it.text) || inProject(it.text, it.project) {
		return "", false
	}
	return it.text, true
}

// dotenvWrite finds an environment file written outside the project, replaced whole (which may
// overwrite the credentials it held), or edited to set a variable that makes programs load code
// (NODE_OPTIONS, LD_PRELOAD, ...): the programs that run the project load it.
func dotenvWrite(_ *Classifier, it item) (string, bool) {
	if !effects.IsDotenv(it.text) {
		return "", false
	}
	if !inProject(it.text, it.project) || it.tool == "Write" {
		return it.text, true // a whole new file may overwrite the credentials it held
	}
	for line := range strings.Lines(it.content) {
		name, value, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		if ok && loadsCode(strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"'`), it.cwd) {
			return it.text + ": " + strings.TrimSpace(name), true
		}
	}
	return "", false
}

// sessionMounts is a Cowork session's folder of mounts as the VM sees it; hostOutputs, a host
// session's working folder.
// projectRoots are the folders a session works in: its working folder and, in Cowork, every
// folder mounted beside it (the user's folders, uploads, outputs). Their .claude stays guarded
// by its own rules.
func projectRoots(cwd string) []string {
	roots := []string{cwd}
	if m := sessionMounts(cwd); m != "" {
		roots = append(roots, m)
	} else if isHostOutputs(cwd) {
		roots = append(roots, path.Dir(cwd))
	}
	return roots
}

// sessionMounts is the VM session's folder of mounts cwd starts with (/sessions/NAME/mnt), or "".
// Written out, not as an expression: every call reads it, and every hook process would compile it.
func sessionMounts(cwd string) string {
	rest, ok := strings.CutPrefix(cwd, "/sessions/")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, '/'); i > 0 && strings.HasPrefix(rest[i:], "/mnt") {
		return cwd[:len("/sessions/")+i+len("/mnt")]
	}
	return ""
}

// isHostOutputs reports a host session's outputs folder: .../local_NAME/outputs.
func isHostOutputs(cwd string) bool {
	dir, ok := strings.CutSuffix(cwd, "/outputs")
	if !ok {
		return false
	}
	name := dir[strings.LastIndexByte(dir, '/')+1:]
	return len(name) > len("local_") && strings.HasPrefix(name, "local_") && strings.Contains(dir, "/")
}

// obfuscated finds code decoded at run time from data the command does not show, then run.
func obfuscated(_ *Classifier, it item) (string, bool) {
	if it.cmd != nil || it.an == nil || len(it.an.Obfuscated) == 0 {
		return "", false
	}
	return it.an.Obfuscated[0], true
}

func dynamicCode(_ *Classifier, it item) (string, bool) {
	if it.cmd != nil || it.an == nil || len(it.an.Dynamic) == 0 {
		return "", false
	}
	return it.an.Dynamic[0], true
}

// onlyReadsSettings reports a command that reads the session's settings and changes nothing:
// reading is not tampering, and knowing the hook is there gives the agent nothing.
func onlyReadsSettings(it item) bool {
	reads := func(c *facts.Command) bool {
		return settingsReaders[c.Name] && len(c.Wrappers) == 0 && !slices.ContainsFunc(c.Args, func(a string) bool {
			return a == "-i" || strings.HasPrefix(a, "-i") && (c.Name == "sed" || c.Name == "yq") || a == "--in-place"
		})
	}
	if it.cmd != nil {
		return reads(it.cmd)
	}
	an := it.an
	if an == nil || an.ParseError != nil || len(an.Dynamic) > 0 || an.Exceeded != "" {
		return false
	}
	if len(an.Writes) > 0 {
		return false // cd .claude && echo … > settings.json
	}
	for i := range an.Commands {
		c := &an.Commands[i]
		switch {
		case reads(c):
		case c.Name == "cd" || c.Name == "pushd" || c.Name == "popd" || c.Name == "pwd" || c.Name == "echo":
		default:
			return false // every command of the line reads, or only moves about
		}
	}
	return true
}

// guardTamper finds commands that touch the guard's settings or folder in any spelling: a
// command (or interpreter code) naming .claude together with settings or coworkbridge, in either
// order and any case (.Claude/Settings.json is the same file on a Mac), and the .claude folder itself handed to a tool that moves, links or replaces it. Plain
// substring tests: this runs on every command.
func guardTamper(_ *Classifier, it item) (string, bool) {
	l := strings.ToLower(it.text)
	if strings.Contains(l, ".claude") && strings.Contains(l, "coworkbridge") {
		return it.text, true // its request ids and decisions: not even to be read
	}
	if strings.Contains(l, ".claude") && strings.Contains(l, "settings") && !onlyReadsSettings(it) {
		return it.text, true
	}
	if it.cmd != nil && folderTools.Has(it.cmd.Name) {
		for _, a := range it.cmd.Args {
			if path.Base(strings.ToLower(strings.TrimRight(a, "/"))) == ".claude" {
				return it.cmd.Line(), true
			}
		}
	}
	if it.cmd != nil { // an archive unpacked, a repository cloned, into a .claude folder
		if d := unpackedInto(it.cmd); path.Base(strings.ToLower(strings.TrimRight(d, "/"))) == ".claude" {
			return it.cmd.Line(), true
		}
	}
	return "", false
}

// unreadProgram finds the files a command runs that its door could not read.
func unreadProgram(_ *Classifier, it item) (string, bool) {
	if it.cmd != nil || it.an == nil {
		return "", false
	}
	unread := it.an.Unread()
	if len(unread) == 0 {
		return "", false
	}
	return "runs " + strings.Join(unread, ", ") + ", which could not be read", true
}

// analysisLimit finds commands built to exhaust the analyser (values doubled until they are
// gigabytes): the part past the limit was never looked at.
func analysisLimit(_ *Classifier, it item) (string, bool) {
	if it.cmd != nil || it.an == nil || it.an.Exceeded == "" {
		return "", false
	}
	return it.an.Exceeded, true
}

// shellEscape finds a shell started with no command to run, reading what it runs from a
// terminal: the shell escape of GTFOBins (find -exec /bin/sh, vim -c ':!sh', awk's
// system("/bin/sh"), pty.spawn), where what it then runs is never shown to the hook.
func shellEscape(_ *Classifier, it item) (string, bool) {
	cmd := it.cmd
	if cmd == nil || !facts.IsShell(cmd.Name) || cmd.PipedFrom != "" || len(cmd.Upstream) > 0 {
		return "", false
	}
	if _, ok := cmd.FDs["0"]; ok {
		return "", false // its commands come from a file or text the command line shows
	}
	for _, a := range cmd.Args {
		if a == "-c" || !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return "", false // a command, a script, or options bundling -c
		}
	}
	return cmd.Name + " started with nothing to run but what it reads", true
}

func unparseable(_ *Classifier, it item) (string, bool) {
	switch {
	case it.cmd != nil || it.an == nil:
		return "", false
	case it.an.ParseError != nil:
		return it.an.ParseError.Error(), true
	case it.an.Repaired != "" && unfinishedExpansion.MatchString(it.text):
		// Read only after a repair, and the error is an expansion left open ($((, $(, ${, a
		// backquote): bash reads those across what follows, where the parser gave up.
		return it.an.Repaired, true
	}
	return "", false
}

// unfinishedExpansion is an expansion the text opens: where bash and the parser may part ways.
var unfinishedExpansion = lazyregexp.New("\\$\\(\\(|\\$\\(|\\$\\{|`")

// defaultExecutables are programs an agent commonly runs for ordinary work. Anything else is
// asked about (rule bash.unknown-executable); admins add to the list with
// policy.allowed_executables.
var defaultExecutables = nameset.Of(
	"ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "find", "fd",
	"tree", "file", "stat", "wc", "sort", "uniq", "cut", "tr", "sed", "awk", "jq", "yq", "xargs",
	"echo", "printf", "pwd", "cd", "pushd", "popd", "dirname", "basename", "realpath", "readlink",
	"which", "whereis", "type", "command", "test", "true", "false", "date", "sleep", "env",
	"printenv", "export", "unset", "set", "source", "alias", "read", "diff", "cmp", "comm", "patch",
	"touch", "mkdir", "rmdir", "cp", "mv", "ln", "rm", "chmod", "tar", "gzip", "gunzip", "zip",
	"unzip", "xz", "bzip2", "zcat", "md5sum", "sha1sum", "sha256sum", "shasum", "base64", "od", "xxd",
	"hexdump", "strings", "git", "gh", "hg", "svn", "make", "cmake", "ninja", "bazel", "gradle",
	"mvn", "ant", "go", "gofmt", "cargo", "rustc", "rustup", "npm", "npx", "node", "yarn", "pnpm",
	"bun", "deno", "tsc", "python", "python3", "pip", "pip3", "pipx", "uv", "poetry", "pytest",
	"ruby", "gem", "bundle", "rake", "perl", "php", "composer", "java", "javac", "kotlin", "scala",
	"sbt", "dotnet", "swift", "swiftc", "clang", "gcc", "g++", "cc", "ld", "ar", "nm", "objdump",
	"lldb", "gdb", "valgrind", "docker", "podman", "kubectl", "helm", "terraform", "curl", "wget",
	"http", "ssh", "scp", "rsync", "ping", "dig", "nslookup", "host", "ps", "top", "htop", "kill",
	"pkill", "pgrep", "lsof", "df", "du", "free", "uname", "hostname", "id", "whoami", "groups",
	"man", "help", "info", "tldr", "open", "xdg-open", "code", "vim", "vi", "nano", "emacs", "tmux",
	"screen", "watch", "time", "timeout", "nohup", "nice", "tee", "column", "paste", "join", "split",
	"fold", "fmt", "nl", "tac", "rev", "seq", "yes", "bc", "expr", "shuf", "mktemp", "install",
	"truncate", "brew", "apt", "apt-get", "sqlite3", "psql", "mysql", "redis-cli", "mongo", "mongosh",
	"eslint", "prettier", "black", "ruff", "mypy", "flake8", "pylint", "isort", "tox", "nox", "jest",
	"vitest", "mocha", "playwright", "cypress", "webpack", "vite", "rollup", "esbuild", "swc",
	"turbo", "nx", "lerna", "bash", "sh", "zsh", "dash", "fish", "exit", "return", "local", "for",
	"while", "if", "case", "function", "then", "do", "done", "fi", "esac", "cal", "history", "jobs",
	"fg", "bg", "wait", "trap", "ulimit", "umask", "shopt", "hash", "convert", "ffmpeg", "pandoc",
	"latexmk", "pdflatex", "xelatex", "sips", "pbcopy", "pbpaste", "osascript", "defaults", "plutil",
	"launchctl", "aws", "gcloud", "az", "soffice", "libreoffice", "lowriter", "localc", "loimpress",
	"unoconv", "pdftotext", "pdftoppm", "pdfinfo", "pdfimages", "pdffonts", "pdfseparate", "pdfunite",
	"pdftohtml", "pdftk", "qpdf", "mutool", "ocrmypdf", "img2pdf", "magick", "identify", "mogrify",
	"montage", "tesseract", "gs", "ghostscript", "exiftool", "markitdown", "wkhtmltopdf",
	"weasyprint", "textutil", "qlmanage", "mdls", "mdfind", "ffprobe", "csvlook", "csvcut", "csvstat",
	"in2csv", "csvsql", "xlsx2csv", "docx2txt", "antiword", "catdoc", "unrtf", "html2text", "lynx",
	"w3m",
)

var manifestPath = lazyregexp.New(`(^|/)(package\.json|pyproject\.toml|setup\.py|setup\.cfg|Cargo\.toml|go\.mod|Gemfile|composer\.json|pom\.xml|build\.gradle(\.kts)?|requirements[^/]*\.txt|Pipfile)$`)

// dependencyText recognises text that declares dependencies in a manifest.
var dependencyText = lazyregexp.New(`(?im)(dependencies|devDependencies|optionalDependencies|peerDependencies|install_requires|\[dependencies\]|\[dev-dependencies\]|^\s*require\b|^\s*gem\s|<dependency>|implementation\s*[('"]|^[A-Za-z0-9_.\-\[\]]+\s*(==|>=|<=|~=|!=)|"(preinstall|postinstall|prepare|install)"\s*:)`)

// manifestDependencies finds edits to the dependency parts of package manifests: a new
// dependency or install script is how a supply-chain attack enters a project.
func manifestDependencies(_ *Classifier, it item) (string, bool) {
	if !manifestPath.MatchString(it.text) {
		return "", false
	}
	base := it.text[strings.LastIndex(it.text, "/")+1:]
	if base == "go.mod" || strings.HasPrefix(base, "requirements") || base == "Gemfile" || base == "Pipfile" {
		return it.text, true // nothing but dependencies in these
	}
	if m := dependencyText.FindString(it.content); m != "" {
		return it.text, true
	}
	return "", false
}

// gitValidator adapts a test of a git command to a rule validator.
func gitValidator(test func(effects.GitCall) bool) func(*Classifier, item) (string, bool) {
	return func(_ *Classifier, it item) (string, bool) {
		g, ok := effects.ParseGit(it.cmd)
		if !ok || !test(g) {
			return "", false
		}
		return it.cmd.Line(), true
	}
}

// gitDiscardValidator matches a git command that throws work away: all of it, or a part.
func gitDiscardValidator(all bool) func(*Classifier, item) (string, bool) {
	return func(_ *Classifier, it item) (string, bool) {
		g, ok := effects.ParseGit(it.cmd)
		if !ok {
			return "", false
		}
		if what, isAll := effects.GitDiscard(g); what != "" && isAll == all {
			return it.cmd.Line() + " (discards " + what + ")", true
		}
		return "", false
	}
}

// configSurface is where the CLI reads configuration that can start programs beyond its settings
// files, at any level (a session's .claude, a project's .claude): CLI 2.1.332 keeps its own
// sandbox's writes out of the same places. m[2] is the folder, m[3] the file.
var configSurface = lazyregexp.New(`(?i)(^|/)\.claude/(?:(skills|agents|commands|output-styles|plugins|workflows|routines)(?:/|$)|(launch\.json|\.claude\.json)$)`)

var surfaceKinds = lazy.Value[map[string]frontmatter.Kind]{Make: func() map[string]frontmatter.Kind {
	return map[string]frontmatter.Kind{
		"skills": frontmatter.Skill, "agents": frontmatter.Agent, "commands": frontmatter.Command,
		"output-styles": frontmatter.OutputStyle,
	}
}}

// configSurfaceWrite finds a write into the CLI's configuration that could start something: any
// write there but a whole markdown file whose frontmatter and body start nothing (a skill, an
// agent or a command written with the Write tool, whose content is known), or a skill's own
// scripts and notes, which run only through judged calls. The daemon holds whatever gets past
// (a helper program's write); this refusal is the first line.
func configSurfaceWrite(_ *Classifier, it item) (string, bool) {
	m := configSurface.FindStringSubmatch(it.text)
	if m == nil {
		return "", false
	}
	kind, known := surfaceKinds.Get()[strings.ToLower(m[2])]
	if !known || it.tool != "Write" {
		return it.text, true
	}
	rest := it.text[strings.Index(strings.ToLower(it.text), strings.ToLower(m[0]))+len(m[0]):]
	if kind == frontmatter.Skill && strings.Contains(rest, "/") && !strings.EqualFold(path.Base(rest), "SKILL.md") {
		return "", false // a skill's script or note: inert until a judged call runs it
	}
	if !strings.EqualFold(path.Ext(it.text), ".md") {
		return it.text, true
	}
	if v := frontmatter.Judge(kind, []byte(it.content), nil); !v.Clean() {
		return it.text + ": " + strings.Join(v.Reasons(), ", "), true
	}
	return "", false
}

// agentLine reads an agent effect's line: the program, and why it is unguarded ("" when it
// inherits the session's hook).
var agentLine = lazyregexp.New(`^agent program=(\S+) (?:unguarded why="([^"]*)"|unguarded why=(\S+))?`)

// nestedAgent finds an agent started by the agent that runs tool calls no hook of the session
// judges, unless the admin allowed that agent program.
func nestedAgent(c *Classifier, it item) (string, bool) {
	m := agentLine.FindStringSubmatch(it.text)
	if m == nil || c.agents[strings.ToLower(m[1])] {
		return "", false
	}
	if m[2]+m[3] == "" {
		if it.inVM {
			// In the VM, what carries the session's hook into it is the session's settings.json,
			// which the agent can rewrite (and a process of its own keep rewriting) as it starts.
			return "start the agent " + m[1] + " in Cowork's VM, where its guard would rest on a settings file the agent can rewrite", true
		}
		if it.sessionGuarded {
			return "start the agent " + m[1] + ", whose guard would rest on the session's settings file, which the agent can rewrite as it starts (only the managed drop-in's hook carries the guard into a nested agent)", true
		}
		// On the Mac the managed drop-in guards it, but it also loads the configuration of the
		// folder it starts in (hooks, MCP servers, skills, apiKeyHelper): in a Cowork session the
		// guard holds that only in the session's outputs folder.
		if start := facts.CanonPath(it.cwd, ""); it.own != "" && !strings.EqualFold(start, it.own+"/outputs") {
			return "start the agent " + m[1] + " in " + start + ", whose configuration (hooks, MCP servers, skills) the guard does not hold: only the session's outputs folder's is", true
		}
		return "", false
	}
	return "start the agent " + m[1] + ", whose tool calls escape this session's guard: " + m[2] + m[3], true
}
