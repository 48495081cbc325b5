package facts

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// A command often runs more than its own text: a script the session wrote (bash run.sh,
// python3 nest.py, ./build), a Makefile's recipes (make test), a package.json script (npm run
// build). The analysis names each such file (Runs); the caller, which may read the machine,
// reads them as the user would run them and hands their content back (Analysis.Files), and the
// analysis then reads each as the language it is run as. A file the caller could not read is
// Unread: what it runs is unknown.

// RunKind is how a command runs a file.
type RunKind string

const (
	RunShell   RunKind = "shell"   // bash f, sh f, source f: the file is shell
	RunInterp  RunKind = "interp"  // python3 f, node f: the file is code of RunFile.Interp
	RunExe     RunKind = "exe"     // ./f: its first line names its interpreter, else a shell runs it
	RunMake    RunKind = "make"    // make T: the Makefile's recipes for T and what T needs
	RunPackage RunKind = "package" // npm run T: package.json's scripts T, preT and postT
	// RunGitConfig: git T reads the repository's configuration, which may run commands for T
	// and move its hooks (see git.go).
	RunGitConfig RunKind = "git-config"
	// RunSpec: kubectl apply -f, docker compose up: a container spec whose grants of the host the
	// effects read (Analysis.Specs); Interp holds its kind (ConfigPodSpec, ConfigCompose).
	RunSpec RunKind = "spec"
	// RunEnvrc: direnv allow trusts a folder's .envrc, which direnv then runs in every shell that
	// enters the folder; its own functions read as what they do (see readEnvrc).
	RunEnvrc RunKind = "envrc"
)

// RunFile is a file a command runs.
type RunFile struct {
	// Path is the file as the command names it, joined with the folder the command starts in:
	// relative to the call's folder, absolute, or from ~. A path holding "$" is only known at run
	// time, and no caller can read it.
	Path    string
	Kind    RunKind
	Interp  string   // for RunInterp: the interpreter
	Targets []string // for RunMake and RunPackage: what is run ("" for make's default goal)
	Args    []string // for RunShell: its positional parameters
	// Optional: most commands that run it find none (a repository's hooks and configuration),
	// so one that cannot be read is not asked about (see Unread).
	Optional bool
}

// Limits on what the files a command runs add to its analysis.
const (
	// MaxRunFileBytes bounds one file read for its content; a caller reads no more, and a larger
	// file is unread.
	MaxRunFileBytes = 256 << 10
	// maxRuns bounds the files one analysis names.
	maxRuns = 32
)

// Unread are the files the command runs that its caller could not read (Files holds no entry
// for them), optional ones aside; nil when the caller read nothing at all (Files nil), which
// judges by name only.
func (a *Analysis) Unread() []string {
	return a.unread(false)
}

// ToRead are the files the command runs that Files holds no entry for, optional ones included:
// what a caller reads.
func (a *Analysis) ToRead() []string {
	return a.unread(true)
}

func (a *Analysis) unread(optional bool) []string {
	if a.Files == nil {
		return nil
	}
	var out []string
	for _, r := range a.Runs {
		if _, ok := a.Files[r.Path]; !ok && (optional || !r.Optional) && !slices.Contains(out, r.Path) {
			out = append(out, r.Path)
		}
	}
	return out
}

// ReadScript reports whether the program cmd runs by its path is a script the caller read and
// the analysis read in turn (its commands are judged as the rest are): not a compiled program,
// not a file left unread.
func (a *Analysis) ReadScript(cmd *Command) bool {
	if cmd.Exe == "" {
		return false
	}
	text := a.Files[joinDir(cmd.Dir, cmd.Exe)]
	switch interp := shebang(text); {
	case text == "" || interp == "binary":
		return false
	case interp == "" || shells.Has(interp) || interpreters.Get()[interp] != "":
		return true
	}
	return false
}

// run notes that cmd runs the file r and, when the caller read it, analyses its content.
func (w *walker) run(cmd Command, r RunFile) {
	r.Path = joinDir(cmd.Dir, r.Path)
	if len(w.a.Runs) >= maxRuns {
		w.a.Dynamic = append(w.a.Dynamic, "runs more files than the analysis limit")
		return
	}
	w.a.Runs = append(w.a.Runs, r)
	text, ok := w.a.Files[r.Path]
	if !ok || text == "" || w.depth >= maxDepth {
		return
	}
	defer func(from string) { w.from = from }(w.from)
	w.from = r.Path // what the file runs is named by it, here and in what it runs in turn
	switch r.Kind {
	case RunShell:
		w.shellFile(text, r.Args)
	case RunInterp:
		w.a.interp(r.Interp, text, w)
	case RunExe:
		switch interp := shebang(text); {
		case interp == "binary":
			// a compiled program: judged by its name, as any program on the machine
		case interp == "" || shells.Has(interp):
			w.shellFile(text, r.Args)
		case interpreters.Get()[interp] != "":
			w.a.interp(interp, text, w)
		default:
			w.a.Dynamic = append(w.a.Dynamic, r.Path+" is run by "+interp+", which the analysis does not read")
		}
	case RunMake:
		for _, line := range MakeRecipes(text, r.Targets) {
			w.a.shell(line, w.depth+1, w.scope())
		}
	case RunPackage:
		for _, line := range PackageScripts(text, r.Targets) {
			w.a.shell(line, w.depth+1, w.scope())
		}
	case RunGitConfig:
		w.gitConfigRuns(r, text)
	case RunEnvrc:
		f, _ := readEnvrc(text, r.Path)
		w.shellFile(f.Commands[0], nil)
	case RunSpec:
		w.a.Specs = append(w.a.Specs, Spec{Kind: r.Interp, Path: r.Path, Text: text})
	}
}

// shellFile analyses a shell script with its positional parameters.
func (w *walker) shellFile(text string, args []string) {
	vars := make(map[string]string, len(w.vars)+len(args)+2)
	for k, v := range w.vars {
		vars[k] = v
	}
	for i, a := range args {
		vars[strconv.Itoa(i+1)] = a
	}
	vars["@"], vars["*"] = strings.Join(args, " "), strings.Join(args, " ")
	w.a.shell(text, w.depth+1, scope{vars: vars, st: w.st, from: w.from})
}

// shebang is the interpreter a script's first line names ("" for none, "binary" for a file that
// is not text).
func shebang(text string) string {
	head := text[:min(len(text), 512)]
	if strings.ContainsRune(head, 0) || strings.HasPrefix(head, "\x7fELF") || strings.HasPrefix(head, "\xcf\xfa\xed\xfe") || strings.HasPrefix(head, "\xca\xfe\xba\xbe") {
		return "binary"
	}
	line, ok := strings.CutPrefix(head, "#!")
	if !ok {
		return ""
	}
	line, _, _ = strings.Cut(line, "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return ""
	}
	name := baseName(f[0])
	if name == "env" { // #!/usr/bin/env -S python3 -u
		for _, a := range f[1:] {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				return baseName(a)
			}
		}
	}
	return canonicalProgram(name)
}

// joinDir is p as seen from the call's folder, for a command started in dir.
func joinDir(dir, p string) string {
	if dir == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return p
	}
	if strings.Contains(dir, "$") {
		return dir + "/" + p // unknown until it runs: nobody can read it
	}
	return path.Join(dir, p)
}

// systemProgram reports a path that is the machine's own program, not one a session could have
// written: those are judged by their names.
func systemProgram(p string) bool {
	for _, d := range []string{"/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/libexec/", "/System/", "/opt/homebrew/bin/", "/usr/local/bin/", "/nix/"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// runs finds the files cmd runs (see RunFile).
func (w *walker) runs(cmd Command) {
	ops := Operands(cmd.Args)
	switch {
	case cmd.Exe != "" && !systemProgram(cmd.Exe) && !strings.Contains(cmd.Exe, "$("):
		if w.a.Scripts[cmd.Exe] == "" {
			w.run(cmd, RunFile{Path: cmd.Exe, Kind: RunExe, Args: cmd.Args})
		}
	case (shells.Has(cmd.Name) || cmd.Name == "source" || cmd.Name == "."):
		if NoExec(&cmd) || slices.Contains(cmd.Args, "-c") || shells.Has(cmd.Name) && hasShortFlag(cmd.Args, 'c') || len(ops) == 0 || ops[0] == "-" {
			return
		}
		if w.a.Scripts[ops[0]] == "" && w.a.Fetched[ops[0]] == "" {
			w.run(cmd, RunFile{Path: ops[0], Kind: RunShell, Args: ops[1:]})
		}
	case interpreters.Get()[cmd.Name] != "":
		if f := interpFile(cmd); f != "" && w.a.Scripts[f] == "" && w.a.Fetched[f] == "" {
			w.run(cmd, RunFile{Path: f, Kind: RunInterp, Interp: cmd.Name})
		}
	case cmd.Name == "make" || cmd.Name == "gmake":
		if slices.ContainsFunc(cmd.Args, func(a string) bool { return a == "--version" || a == "-v" || a == "--help" || a == "-h" }) {
			return
		}
		dir, file, targets := makeArgs(cmd.Args)
		files := []string{file}
		if file == "" { // make looks for these in turn; each read is judged (one that is missing runs nothing)
			files = []string{"GNUmakefile", "makefile", "Makefile"}
		}
		for _, f := range files {
			w.run(Command{Dir: joinDir(cmd.Dir, dir)}, RunFile{Path: f, Kind: RunMake, Targets: targets})
		}
	case cmd.Name == "git":
		w.gitRuns(cmd)
	case cmd.Name == "kubectl" || cmd.Name == "oc" || containerRuntimes.Has(cmd.Name) || cmd.Name == "docker-compose" || cmd.Name == "podman-compose":
		for _, r := range specRuns(cmd, ops) {
			if w.a.Scripts[r.Path] == "" {
				w.run(cmd, r)
			}
		}
	case cmd.Name == "direnv":
		if f := envrcOf(ops); f != "" && w.a.Scripts[f] == "" && w.a.Fetched[f] == "" {
			w.run(cmd, RunFile{Path: f, Kind: RunEnvrc})
		}
	default:
		if dir, targets, ok := packageRun(cmd); ok {
			w.run(Command{Dir: joinDir(cmd.Dir, dir)}, RunFile{Path: "package.json", Kind: RunPackage, Targets: targets})
		}
	}
}

// Spec is a container spec a command starts containers from, as its caller read it.
type Spec struct{ Kind, Path, Text string }

// composeFiles are the files docker compose reads when none is named, in its order.
var composeFiles = []string{"compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"}

// specRuns are the spec files a command starts containers from: kubectl apply, create or replace
// -f FILE (not a folder, a URL or standard input), and docker compose up, run or create with its
// -f files or the default ones.
func specRuns(cmd Command, ops []string) []RunFile {
	var out []RunFile
	files := append(OptionValues(cmd.Args, "-f"), OptionValues(cmd.Args, "--filename")...)
	switch {
	case cmd.Name == "kubectl" || cmd.Name == "oc":
		if len(ops) == 0 || ops[0] != "apply" && ops[0] != "create" && ops[0] != "replace" && ops[0] != "run" {
			return nil
		}
		for _, f := range files {
			if f != "-" && !strings.Contains(f, "://") {
				out = append(out, RunFile{Path: f, Kind: RunSpec, Interp: ConfigPodSpec, Optional: true})
			}
		}
	default:
		compose := cmd.Name == "docker-compose" || cmd.Name == "podman-compose" || len(ops) > 0 && ops[0] == "compose"
		if !compose || !slices.ContainsFunc(ops, func(o string) bool { return o == "up" || o == "run" || o == "create" || o == "start" }) {
			return nil
		}
		files = append(files, OptionValues(cmd.Args, "--file")...)
		optional := len(files) == 0
		if optional {
			files = composeFiles
		}
		for _, f := range files {
			if f != "-" {
				out = append(out, RunFile{Path: f, Kind: RunSpec, Interp: ConfigCompose, Optional: optional})
			}
		}
	}
	return out
}

// envrcOf is the .envrc that direnv allow (permit, grant) or direnv exec trusts or runs: the
// folder's, or the file named.
func envrcOf(ops []string) string {
	if len(ops) == 0 {
		return ""
	}
	dir := "."
	switch ops[0] {
	case "allow", "permit", "grant", "exec":
		if len(ops) > 1 {
			dir = ops[1]
		}
	default:
		return ""
	}
	if b := path.Base(dir); b == ".envrc" || b == ".env" {
		return dir
	}
	return path.Join(dir, ".envrc")
}

// hasShortFlag reports a combined short flag holding c before the first operand (bash -ec).
func hasShortFlag(args []string, c byte) bool {
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			return false
		}
		if !strings.HasPrefix(a, "--") && strings.IndexByte(a[1:], c) >= 0 {
			return true
		}
	}
	return false
}

// interpOptsWithValue are interpreter options that take the next word, which is then not the
// script.
var interpOptsWithValue = nameset.Of("-W", "-X", "-r", "--require", "--import",
	"--loader", "--experimental-loader", "-I", "--env-file", "--inspect-port", "--title")

// interpFile is the script an interpreter runs: its first operand, unless the code comes from
// an option (-c, -e, -m module) or standard input.
func interpFile(cmd Command) string {
	flag := interpreters.Get()[cmd.Name]
	for i := 0; i < len(cmd.Args); i++ {
		a := cmd.Args[i]
		switch {
		case a == flag || a == "-m" || a == "-" || a == "--eval" || a == "-p" || a == "--print":
			return "" // code from an option, a module, or stdin
		case a == "--":
			if i+1 < len(cmd.Args) {
				return cmd.Args[i+1]
			}
			return ""
		case strings.HasPrefix(a, "-"):
			if interpOptsWithValue.Has(a) {
				i++
			}
		default:
			if cmd.Name == "deno" || cmd.Name == "bun" {
				if a == "run" {
					continue
				}
				if !strings.ContainsAny(a, "./") {
					return "" // bun test, deno fmt: a subcommand
				}
			}
			return a
		}
	}
	return ""
}

// makeArgs reads make's command line: the folder it runs in (-C), its makefile (-f; "" for the
// ones make looks for), and the targets (none: the default goal). Variable assignments on the
// command line are not targets.
func makeArgs(args []string) (dir, file string, targets []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "-C" || a == "--directory":
			dir = joinDir(dir, next())
		case strings.HasPrefix(a, "--directory="):
			dir = joinDir(dir, strings.TrimPrefix(a, "--directory="))
		case strings.HasPrefix(a, "-C") && len(a) > 2:
			dir = joinDir(dir, a[2:])
		case a == "-f" || a == "--file" || a == "--makefile":
			file = next()
		case strings.HasPrefix(a, "--file=") || strings.HasPrefix(a, "--makefile="):
			_, file, _ = strings.Cut(a, "=")
		case strings.HasPrefix(a, "-f") && len(a) > 2:
			file = a[2:]
		case a == "-j" || a == "-l" || a == "-o" || a == "-W" || a == "-I":
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && (a != "-j" && a != "-l" || isNumber(args[i+1])) {
				i++
			}
		case strings.HasPrefix(a, "-"):
		case strings.Contains(a, "="):
		default:
			targets = append(targets, a)
		}
	}
	if len(targets) == 0 {
		targets = []string{""}
	}
	return dir, file, targets
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// packageManagers' own subcommands, which run no script of the package's (install and its
// kin aside, see lifecycle).
var packageBuiltins = nameset.Of("add", "audit", "bin", "bugs", "cache", "config", "create", "dedupe", "deprecate", "dist-tag",
	"dlx", "docs", "doctor", "exec", "explain", "explore", "fund", "get", "help", "import", "info", "init", "link", "list",
	"login", "logout", "ls", "npm", "outdated", "owner", "pack", "patch", "ping", "plugin", "prefix", "prune", "publish",
	"rebuild", "remove", "repo", "root", "search", "set", "setup", "star", "store", "team", "token", "uninstall", "unlink",
	"unpublish", "up", "update", "upgrade", "version", "view", "whoami", "why", "workspace", "workspaces", "x", "node",
	"global", "licenses", "outdated", "policies", "tag", "unplug", "constraints", "self", "env", "recursive", "-r", "i",
	"install", "ci", "clean-install", "isntall", "sbom", "query", "stars", "completion", "edit", "hook", "org", "profile",
	"access", "adduser", "shrinkwrap", "pkg", "diff", "find-dupes", "install-ci-test", "install-test", "it", "cit", "r", "rm")

// lifecycle are the scripts of the project's own package.json an install runs.
var lifecycle = []string{"preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare"}

// packageRun reads a package manager's command line: the folder whose package.json it reads and
// the scripts it runs (with their pre and post scripts).
func packageRun(cmd Command) (dir string, targets []string, ok bool) {
	var dirFlags []string
	switch cmd.Name {
	case "npm":
		dirFlags = []string{"--prefix", "-C"}
	case "pnpm":
		dirFlags = []string{"--dir", "-C", "--prefix"}
	case "yarn":
		dirFlags = []string{"--cwd"}
	case "bun":
		dirFlags = []string{"--cwd"}
	default:
		return "", nil, false
	}
	if v := OptionValues(cmd.Args, dirFlags...); len(v) > 0 {
		dir = v[len(v)-1]
	}
	ops := packageOperands(cmd.Args, dirFlags)
	script := ""
	switch {
	case len(ops) == 0:
		if cmd.Name != "yarn" && cmd.Name != "pnpm" {
			return "", nil, false
		}
		return dir, lifecycle, true // yarn alone installs
	case ops[0] == "run" || ops[0] == "run-script" || ops[0] == "rum" || ops[0] == "urn":
		if len(ops) < 2 {
			return "", nil, false
		}
		script = ops[1]
	case ops[0] == "test" || ops[0] == "t" || ops[0] == "tst" || ops[0] == "start" || ops[0] == "stop" || ops[0] == "restart":
		script = map[string]string{"t": "test", "tst": "test"}[ops[0]]
		if script == "" {
			script = ops[0]
		}
	case (ops[0] == "install" || ops[0] == "i" || ops[0] == "ci" || ops[0] == "clean-install") && len(ops) == 1:
		return dir, lifecycle, true
	case cmd.Name != "npm" && !packageBuiltins.Has(ops[0]) && !(cmd.Name == "bun" && strings.ContainsAny(ops[0], "./")):
		script = ops[0] // yarn build, pnpm lint, bun dev
	default:
		return "", nil, false
	}
	return dir, []string{"pre" + script, script, "post" + script}, true
}

// packageOperands are a package manager's operands, its folder option's value left out.
func packageOperands(args, dirFlags []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if slices.Contains(dirFlags, a) {
			i++
			continue
		}
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}
