package facts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// maxDepth bounds nested shells (sh -c "sh -c '...'"), eval and heredocs.
const maxDepth = 6

// maxCommandBytes bounds the text the analyser parses; longer commands are judged on their
// first part and flagged.
const maxCommandBytes = 256 << 10

// Expansion is the one place where a short command can make the analyser do unbounded work:
// `a=x; a=$a$a; a=$a$a; ...` doubles a value with each assignment, so 40 of them in 349 bytes
// would ask for a terabyte. Each value is cut at maxValueBytes and the whole analysis stops
// expanding after maxExpandBytes; either limit marks the analysis as exceeded, which the default
// rules deny: nobody's legitimate command builds values that large.
const (
	maxValueBytes  = 64 << 10
	maxExpandBytes = 4 << 20
	// maxCommands bounds the simple commands one analysis records (each nested shell adds some).
	maxCommands = 4096
)

// Command is one simple command, normalised: wrappers and leading assignments looked through,
// quotes removed, the program's path and case reduced to its base name.
type Command struct {
	Name    string   // "rm" for /bin/rm, \rm, r''m and RM
	Args    []string // after expansion; unknown variables stay as $NAME
	Assigns []string // NAME=value given to the command (leading or through env)
	// ClearsEnv: env -i (or env -) starts it with an empty environment; Unsets are the variables
	// env -u takes out of it.
	ClearsEnv bool
	Unsets    []string
	// Env are the variables earlier statements set (NAME=value), which it inherits; Unsets also
	// holds those earlier statements unset. Dir is the folder it starts in, relative to the
	// call's, as cd or env -C left it: "" for the call's own, a value holding "$" for one only
	// known at run time.
	Env []string
	Dir string
	// From is the file the command was read from (a script, a Makefile, a package.json) that
	// the call runs; "" for a command of the call's own text.
	From      string
	Wrappers  []string // sudo, env, timeout... in the order they appeared
	PipedFrom string   // the command feeding its stdin through a pipe, if any
	PipesTo   string   // the command its stdout feeds through a pipe, if any
	// Upstream are the commands feeding it through the pipeline, nearest first (a | b | c: c's
	// are b and a): what `curl x | cat | sh` runs comes from curl, however many steps away.
	Upstream     []string
	UpstreamCmds []Command // the same, analysed
	Dynamic      bool      // its name came from a substitution or variable
	Function     bool      // it calls a function the command itself defined (judged through its body)
	FromVar      bool      // its name came from a variable or substitution (known or not)
	Exe          string    // the program as written, when it is a path (./install.sh, /tmp/x)
	// FDs are the descriptors it reaches that the command line itself opened: its standard
	// input and output when redirected, and those its arguments name (/dev/fd/3).
	FDs FDTable
	// Cond: it may not run, or not in the order written (after && or ||, in a branch or a
	// loop, in the background, in a function body).
	Cond bool
	// Globs are the arguments the shell expands as patterns (unquoted *, ?, [): rm -rf /et?
	// removes /etc, rm -rf '/et?' a file of that name.
	Globs []string
}

// Line is the form rules match: the name and the arguments joined by spaces.
func (c Command) Line() string {
	if len(c.Args) == 0 {
		return c.Name
	}
	return c.Name + " " + strings.Join(c.Args, " ")
}

// Code is program text handed to an interpreter (python -c, node -e, a heredoc to ruby...).
type Code struct {
	Interp string
	Text   string
}

// Analysis is what a command string does, as far as static analysis can tell.
type Analysis struct {
	Commands   []Command
	Writes     []string // paths written by redirections
	Reads      []string // paths read by redirections
	Code       []Code
	Assigns    []string // NAME=value set in the script itself
	ParseError error
	// Repaired is the parse error of text read after a repair (see repair), "" when none.
	Repaired string
	Dynamic  []string // why some part could not be known statically
	// CodeActs and CodePaths are what interpreter code does (see scanCode): its acts, and the
	// literal paths it names, judged by the read rules.
	CodeActs  []CodeAct
	CodePaths []string
	// Fetched are files a downloader or decoder writes by redirection (curl … > x.sh); Scripts are
	// literal text written to files (echo 'rm -rf /' > x.sh), analysed when a shell runs them.
	Fetched map[string]string
	Scripts map[string]string
	// Opaque are files a redirection writes text to that the analysis does not know (cat x >> f):
	// what Scripts holds for them is not all they are given (see WrittenText).
	Opaque map[string]bool
	// Files is the content of the files the command runs, as its caller read them at judge time
	// (keyed by RunFile.Path; "" for a file that does not exist, which runs nothing); nil when
	// nothing was read. Runs are the files the command runs, read or not (see runs.go).
	Files map[string]string
	Runs  []RunFile
	// Specs are the container specs the command starts containers from, as read (see specRuns).
	Specs []Spec
	// ForkBomb: a function that calls itself in the background or through a pipe, or a loop that
	// never ends and starts a background job each time.
	ForkBomb bool
	// Net are connections the shell itself opens by redirection (/dev/tcp/host/port); NetIn:
	// one of them feeds a command's standard input (< /dev/tcp/…, 0>&1 after >& /dev/tcp/…).
	Net   []string
	NetIn bool
	// Obfuscated says why the command runs code it decodes from data it does not show
	// (bash -c "$(base64 -d)", os.system(b64decode(payload))): hidden on purpose.
	Obfuscated []string
	// Exceeded names the analysis limit the command ran into, "" when none: the rest of the
	// command was not analysed, so nothing about it can be vouched for.
	Exceeded string

	expanded int // bytes produced by expansion so far
	// aliases and funcs are those the command defines for itself (alias x=..., f() {...}), so
	// that a later use is judged for what it runs.
	aliases map[string]string
	funcs   map[string]string
	envSeen map[string]bool // command-carrying variables already analysed
	parser  *syntax.Parser
	// hashed are builtins given a path by hash -p, which only counts once enable -n disabled
	// them; disabled are those.
	hashed   map[string]string
	disabled map[string]bool
}

func setKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// parse parses shell text with the analysis's parser: one per analysis, reused by nested code,
// since a parser's buffers are its largest allocation and the tree it returns is its own.
func (a *Analysis) parse(src string) (*syntax.File, error) {
	if a.parser == nil {
		a.parser = syntax.NewParser(syntax.KeepComments(false), syntax.Variant(syntax.LangBash))
	}
	return a.parser.Parse(strings.NewReader(src), "")
}

// maxRepairs bounds the parses spent on one piece of shell that does not parse.
const maxRepairs = 8

// repair reads shell the parser refused as bash would run it, or gives up with the first error.
// A here-document left open runs to the end of the input, as bash takes it; any other error has
// the offending byte blanked and the text parsed again, up to maxRepairs times. Bash stops at a
// syntax error, so what the repaired text runs is at least what bash runs, every word of it still
// judged: prose an agent typed as a command (an agent's THOUGHT: line, a stray parenthesis) is
// judged for what its words would do, not asked about because it is not shell. Text the
// repair cannot make parse stays unparseable (rule bash.unparseable).
func (a *Analysis) repair(src string, first error) (*syntax.File, error) {
	err := first
	for range maxRepairs {
		var pe syntax.ParseError
		if !errors.As(err, &pe) {
			return nil, first
		}
		if delim, ok := strings.CutPrefix(pe.Text, "unclosed here-document `"); ok {
			delim = strings.TrimSuffix(delim, "`")
			// Inside $( … ), bash ends the document at its word followed by the ")"; anywhere
			// else the document runs to the end of the input.
			if i := strings.Index(src, "\n"+delim+")"); i >= 0 {
				src = src[:i+1+len(delim)] + "\n" + src[i+1+len(delim):]
			} else {
				src += "\n" + delim + "\n"
			}
		} else if off := int(pe.Pos.Offset()); off < len(src) && (!isQuote(src[off]) || !strings.ContainsRune(src[off+1:], rune(src[off]))) {
			// A quote is blanked only when none of its kind follows: one that did would open a
			// new quote in the repaired text and hide what bash, had it closed the first, runs.
			src = src[:off] + " " + src[off+1:]
		} else {
			return nil, first
		}
		f, perr := a.parse(src)
		if perr == nil {
			a.Repaired = first.Error()
			return f, nil
		}
		err = perr
	}
	return nil, first
}

func isQuote(b byte) bool { return b == '\'' || b == '"' || b == '`' }

// exceed records the first limit reached.
func (a *Analysis) exceed(why string) {
	if a.Exceeded == "" {
		a.Exceeded = why
	}
}

// canonicalProgram folds version suffixes of interpreters: python3.12 runs as python3, node18
// as node.
func canonicalProgram(name string) string {
	switch {
	case strings.HasPrefix(name, "python3"):
		return "python3"
	case strings.HasPrefix(name, "python2"):
		return "python2"
	}
	for _, p := range []string{"node", "ruby", "perl", "php", "lua", "pwsh"} {
		if strings.HasPrefix(name, p) && strings.Trim(name[len(p):], "0123456789.-") == "" {
			return p
		}
	}
	return name
}

// Analyze parses a shell command string and reaches every simple command in it.
func Analyze(src string) *Analysis { return AnalyzeWith(src, nil, nil) }

// AnalyzeWith is Analyze with a parser to reuse (nil: a new one; ReleaseParser hands it back),
// and the content of the files the command runs as the caller read them (see Analysis.Files).
func AnalyzeWith(src string, p *syntax.Parser, files map[string]string) *Analysis {
	a := &Analysis{parser: p}
	if len(src) > maxCommandBytes {
		a.Dynamic = append(a.Dynamic, "command longer than the analysis limit")
		src = src[:maxCommandBytes]
	}
	a.Files = files
	a.shell(src, 0, scope{})
	return a
}

// analyzer state for one parse.
type walker struct {
	a       *Analysis
	depth   int
	folding int // substitutions being folded, nested
	vars    map[string]string
	st      *shellState
	from    string
	piped   map[*syntax.CallExpr]string
	pipesTo map[*syntax.CallExpr]string
	// pipeFrom maps a call to the call feeding its stdin.
	pipeFrom map[*syntax.CallExpr]*syntax.CallExpr
	// lastStmt maps a call to its statement, which holds its redirections and heredocs.
	lastStmt map[*syntax.CallExpr]*syntax.Stmt
	// fds are the descriptors the shell holds open (see fds.go); stmtFDs, each statement's view.
	fds     FDTable
	nextFD  int
	stmtFDs map[*syntax.Stmt]FDTable
	// cond are the calls that may not run, or not in the order written (see markCond).
	cond map[*syntax.CallExpr]bool
	// funcDecls are the functions defined so far; inFunc, the calls inside their bodies.
	funcDecls map[string]*syntax.Stmt
	inFunc    map[*syntax.CallExpr]bool
	// fetchedVars are variables holding text a download gave (read -u from <(curl …)).
	fetchedVars map[string]string
	// decodedSubsts counts substitutions of a decoder's output that could not be folded.
	decodedSubsts int
	// calls caches each function body's calls; cycleSteps counts the states spawnCycle
	// followed, against maxCycleSteps.
	calls      map[*syntax.Stmt][]funcCall
	cycleSteps int
}

// decoderSubst reports a substitution whose command decodes: $(base64 -d), $(xxd -r -p …).
func decoderSubst(cs *syntax.CmdSubst) bool {
	for _, st := range cs.Stmts {
		c := lastCall(st)
		if c == nil || len(c.Args) == 0 {
			continue
		}
		words := make([]string, len(c.Args))
		for i, a := range c.Args {
			words[i] = a.Lit()
		}
		cmd := Command{Name: baseName(words[0]), Args: words[1:]}
		if IsDownloader(cmd.Name) && cmd.Name != "curl" && cmd.Name != "wget" && ProducesCode(&cmd) {
			return true
		}
	}
	return false
}

// scope is what a nested shell, or a function's body, starts with: the variables the shell
// knows and what earlier statements did to the environment and the folder.
type scope struct {
	vars map[string]string
	st   *shellState
	from string // the file the code was read from, "" for the command's own text
}

func (w *walker) scope() scope { return scope{vars: w.vars, st: w.st, from: w.from} }

// shellState is what statements leave to the programs that run after them: the variables put
// into their environment or taken out of it, and the folder cd moved to. Any variable the shell
// assigns counts as exported: what the environment already holds (CLAUDE_CONFIG_DIR in Cowork,
// PATH everywhere) stays exported when a plain assignment changes it.
type shellState struct {
	env   []string        // names set, in the order first set
	unset map[string]bool // names unset and not set again
	// dir is where cd left the shell, relative to the call's folder: "" when it did not move; a
	// value holding "$" is one only known at run time.
	dir string
}

// setEnv notes that name is in the environment of what runs next.
func (st *shellState) setEnv(name string) {
	if !slices.Contains(st.env, name) {
		st.env = append(st.env, name)
	}
	delete(st.unset, name)
}

// unsetEnv notes that name is out of the environment of what runs next.
func (st *shellState) unsetEnv(name string) {
	st.env = slices.DeleteFunc(st.env, func(n string) bool { return n == name })
	if st.unset == nil {
		st.unset = map[string]bool{}
	}
	st.unset[name] = true
}

// chdir moves the shell as cd does; an unknown target makes the folder unknown.
func (st *shellState) chdir(to string) {
	switch {
	case to == "" || to == "~":
		st.dir = "~"
	case to == "-" || strings.Contains(st.dir, "$"):
		st.dir = "$OLDPWD"
	case strings.HasPrefix(to, "/") || strings.HasPrefix(to, "~") || strings.Contains(to, "$"):
		st.dir = to
	default:
		st.dir = path.Join(st.dir, to)
	}
}

// environ fills cmd's view of the shell's state: the variables set before it, those unset, and
// the folder it starts in.
func (w *walker) environ(cmd *Command) {
	for _, name := range w.st.env {
		cmd.Env = append(cmd.Env, name+"="+w.vars[name])
	}
	for _, name := range slices.Sorted(maps.Keys(w.st.unset)) {
		if !slices.Contains(cmd.Unsets, name) {
			cmd.Unsets = append(cmd.Unsets, name)
		}
	}
	if cmd.Dir == "" {
		cmd.Dir = w.st.dir
	} else if !strings.HasPrefix(cmd.Dir, "/") && !strings.HasPrefix(cmd.Dir, "~") && !strings.Contains(cmd.Dir, "$") {
		cmd.Dir = path.Join(w.st.dir, cmd.Dir) // env -C sub, after cd lib
	}
}

func (a *Analysis) shell(src string, depth int, sc scope) {
	if depth > maxDepth {
		a.Dynamic = append(a.Dynamic, "nesting deeper than the analysis limit")
		return
	}
	if a.Exceeded != "" {
		return
	}
	f, err := a.parse(src)
	if err != nil {
		if f, err = a.repair(src, err); err != nil {
			if a.ParseError == nil {
				a.ParseError = err
			}
			return
		}
	}
	if sc.vars == nil {
		sc.vars = map[string]string{}
	}
	if sc.st == nil {
		sc.st = &shellState{}
	}
	w := &walker{a: a, depth: depth, vars: sc.vars, st: sc.st, from: sc.from, piped: map[*syntax.CallExpr]string{}, pipesTo: map[*syntax.CallExpr]string{},
		pipeFrom: map[*syntax.CallExpr]*syntax.CallExpr{}, lastStmt: map[*syntax.CallExpr]*syntax.Stmt{},
		stmtFDs: map[*syntax.Stmt]FDTable{}, cond: map[*syntax.CallExpr]bool{},
		funcDecls: map[string]*syntax.Stmt{}, inFunc: map[*syntax.CallExpr]bool{}}
	syntax.Walk(f, w.visit)
}

func (w *walker) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.BinaryCmd:
		if n.Op == syntax.AndStmt || n.Op == syntax.OrStmt {
			w.markCond(n.Y)
		}
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			if from, to := lastCall(n.X), firstCall(n.Y); from != nil && to != nil {
				w.piped[to] = w.callName(from)
				w.pipesTo[from] = w.callName(to)
				w.pipeFrom[to] = from
			}
		}
	case *syntax.IfClause:
		w.markCond(n.Else)
		for _, st := range n.Then {
			w.markCond(st)
		}
	case *syntax.CaseClause:
		w.markCond(n)
	case *syntax.Stmt:
		if n.Background {
			w.markCond(n) // runs alongside what follows, in no order
		}
		if c, ok := n.Cmd.(*syntax.CallExpr); ok {
			w.lastStmt[c] = n // before the redirections: cat <<EOF > f folds through it
		}
		w.redirects(n)
		if t := w.openFDs(n); len(t) > 0 {
			w.stmtFDs[n] = t
		}
		if c, ok := n.Cmd.(*syntax.CallExpr); ok {
			w.lastStmt[c] = n
		}
	case *syntax.CallExpr:
		w.call(n)
	case *syntax.FuncDecl:
		w.markCond(n.Body)
		w.markInFunc(n.Body)
		if n.Name != nil && n.Body != nil {
			w.funcDecls[n.Name.Value] = n.Body
			var b bytes.Buffer
			syntax.NewPrinter().Print(&b, n.Body)
			if w.a.funcs == nil {
				w.a.funcs = map[string]string{}
			}
			w.a.funcs[n.Name.Value] = b.String()
			if spawnsItself(n.Name.Value, n.Body) {
				w.a.ForkBomb = true
			}
		}
	case *syntax.WhileClause:
		for _, st := range n.Do {
			w.markCond(st)
		}
		if endless(n) && spawnsBackground(n.Do) {
			w.a.ForkBomb = true
		}
	case *syntax.ForClause:
		for _, st := range n.Do {
			w.markCond(st)
		}
		if c, ok := n.Loop.(*syntax.CStyleLoop); ok && c.Cond == nil && spawnsBackground(n.Do) {
			w.a.ForkBomb = true
		}
	case *syntax.DeclClause:
		w.declare(n)
	}
	return true
}

// markCond records the calls below n as conditional: they may not run, or not in the order
// written.
func (w *walker) markCond(n syntax.Node) { markCalls(n, w.cond) }

// markInFunc records the calls below n as inside a function body.
func (w *walker) markInFunc(n syntax.Node) { markCalls(n, w.inFunc) }

func markCalls(n syntax.Node, set map[*syntax.CallExpr]bool) {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			set[c] = true
		}
		return true
	})
}

// funcCall is a call of a function from another's body; spawn: in the background or a pipe.
type funcCall struct {
	name  string
	spawn bool
}

// maxCycleSteps bounds the function-call states one analysis follows looking for fork bombs.
const maxCycleSteps = 20000

func (w *walker) callsIn(body *syntax.Stmt) []funcCall {
	if calls, ok := w.calls[body]; ok {
		return calls
	}
	var out []funcCall
	piped := map[*syntax.CallExpr]bool{}
	syntax.Walk(body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				for _, s := range []*syntax.Stmt{n.X, n.Y} {
					if c, ok := s.Cmd.(*syntax.CallExpr); ok {
						piped[c] = true
					}
				}
			}
		case *syntax.Stmt:
			if c, ok := n.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				out = append(out, funcCall{c.Args[0].Lit(), n.Background || piped[c]})
			}
		}
		return true
	})
	if w.calls == nil {
		w.calls = map[*syntax.Stmt][]funcCall{}
	}
	w.calls[body] = out
	return out
}

// spawnCycle reports whether calling start leads back to start through the functions defined,
// with at least one call on the way that starts a new process each time round.
func (w *walker) spawnCycle(start string) bool {
	type state struct {
		name  string
		spawn bool
	}
	decls := w.funcDecls
	seen := map[state]bool{}
	stack := []state{{start, false}}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		if w.cycleSteps++; w.cycleSteps > maxCycleSteps {
			w.a.exceed(fmt.Sprintf("more than %d function calls to follow", maxCycleSteps))
			return false
		}
		for _, fc := range w.callsIn(decls[cur.name]) {
			if _, ok := decls[fc.name]; !ok {
				continue
			}
			next := state{fc.name, cur.spawn || fc.spawn}
			if next.name == start && next.spawn {
				return true
			}
			stack = append(stack, next)
		}
	}
	return false
}

// spawnsItself reports a function body that calls the function in the background or in a pipe.
func spawnsItself(name string, body *syntax.Stmt) bool {
	found := false
	syntax.Walk(body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if c, ok := n.Cmd.(*syntax.CallExpr); ok && n.Background && len(c.Args) > 0 && c.Args[0].Lit() == name {
				found = true
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				for _, s := range []*syntax.Stmt{n.X, n.Y} {
					if c, ok := s.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 && c.Args[0].Lit() == name {
						found = true
					}
				}
			}
		}
		return !found
	})
	return found
}

// endless reports a while loop whose condition is always true (or an until loop's always false).
func endless(n *syntax.WhileClause) bool {
	if len(n.Cond) != 1 {
		return false
	}
	switch c := n.Cond[0].Cmd.(type) {
	case *syntax.CallExpr:
		switch {
		case len(c.Args) == 1:
			switch path.Base(c.Args[0].Lit()) {
			case "true", ":":
				return !n.Until
			case "false":
				return n.Until
			}
		case len(c.Args) == 3 && c.Args[0].Lit() == "[" && c.Args[2].Lit() == "]" && c.Args[1].Lit() != "":
			return !n.Until // [ true ]: a non-empty word is true
		}
	case *syntax.TestClause:
		if w, ok := c.X.(*syntax.Word); ok && w.Lit() != "" {
			return !n.Until // [[ 1 ]]
		}
	case *syntax.ArithmCmd:
		if w, ok := c.X.(*syntax.Word); ok && w.Lit() != "" && strings.Trim(w.Lit(), "0") != "" {
			return !n.Until // ((1))
		}
	}
	return false
}

// spawnsBackground reports a loop body that starts background jobs faster than it waits for
// them, and never leaves the loop. The body runs again and again, so a wait anywhere in it
// bounds the jobs its own shell started (wait; sleep 1 &); one started inside a subshell,
// (work &), belongs to a process that is gone and no wait reaches it.
func spawnsBackground(stmts []*syntax.Stmt) bool {
	started, orphaned, waits := false, false, false
	for _, s := range stmts {
		if s.Background {
			started = true
		}
		switch c := s.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Args) > 0 {
				switch c.Args[0].Lit() {
				case "break", "exit", "return":
					return false
				case "wait":
					waits = true
				case "disown":
					orphaned = orphaned || started // out of wait's reach from now on
				}
			}
		case *syntax.Subshell:
			if !s.Background && spawnsBackground(c.Stmts) {
				orphaned = true
			}
		}
	}
	return orphaned || started && !waits
}

func firstCall(s *syntax.Stmt) *syntax.CallExpr {
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		return c
	case *syntax.BinaryCmd:
		return firstCall(c.X)
	}
	return nil
}

func lastCall(s *syntax.Stmt) *syntax.CallExpr {
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		return c
	case *syntax.BinaryCmd:
		return lastCall(c.Y)
	}
	return nil
}

func (w *walker) callName(c *syntax.CallExpr) string {
	f := w.fields(c.Args)
	if len(f) == 0 {
		return ""
	}
	cmd := w.unwrap(f, nil)
	return cmd.Name
}

// env expands variables the script set; unknown ones stay visible as $NAME, so that a rule can
// still see `rm -rf $DIR/` for what it is. HOME is ~, so paths under it read the same whatever
// the variable holds; IFS is the shell's default, so rm${IFS}-rf splits as the shell splits it.
func (w *walker) env() expand.Environ { return walkerEnv{w} }

// walkerEnv is the variables the walker knows, as the expander sees them: writable, so that
// ${x:=default} sets x as the shell would.
type walkerEnv struct{ w *walker }

func (e walkerEnv) Get(name string) expand.Variable {
	v := e.value(name)
	if v == "" {
		return expand.Variable{}
	}
	return expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: v}
}

func (e walkerEnv) value(name string) string {
	switch name {
	case "IFS":
		if v, ok := e.w.vars["IFS"]; ok {
			return v // a custom IFS splits as the shell would split it
		}
		return " \t\n"
	case "HOME":
		if v, ok := e.w.vars["HOME"]; ok {
			return v // HOME=/tmp/x; rm -rf "$HOME" is about /tmp/x
		}
		return "~"
	}
	if user, ok := strings.CutPrefix(name, "HOME "); ok {
		return "~" + user // the expander asks "HOME ada" for ~ada: another user's home, kept as written
	}
	if v, ok := e.w.vars[name]; ok {
		return v
	}
	return "$" + name
}

func (e walkerEnv) Each(func(string, expand.Variable) bool) {}

func (e walkerEnv) Set(name string, vr expand.Variable) error {
	switch {
	case !vr.IsSet():
		e.w.vars[name] = ""
	case vr.Kind == expand.String:
		e.w.vars[name] = vr.Str
	}
	return nil
}

func (w *walker) fields(words []*syntax.Word) []string {
	if w.a.Exceeded != "" {
		return w.source(words)
	}
	cfg := &expand.Config{
		Env: w.env(),
		CmdSubst: func(out io.Writer, cs *syntax.CmdSubst) error {
			if s, ok := w.foldSubst(cs); ok {
				_, err := io.WriteString(out, s)
				return err
			}
			if decoderSubst(cs) {
				w.decodedSubsts++
			}
			_, err := io.WriteString(out, "$(...)")
			return err
		},
		ProcSubst: func(*syntax.ProcSubst) (string, error) { return "/dev/fd/63", nil },
	}
	f, err := expand.Fields(cfg, words...)
	if err != nil { // an expansion the expander refuses: keep the source text
		return w.source(words)
	}
	for i, s := range f {
		w.a.expanded += len(s)
		if len(s) > maxValueBytes {
			w.a.exceed(fmt.Sprintf("a value expands to more than %d bytes", maxValueBytes))
			f[i] = s[:maxValueBytes]
		}
	}
	if w.a.expanded > maxExpandBytes {
		w.a.exceed(fmt.Sprintf("expansions add up to more than %d bytes", maxExpandBytes))
	}
	return f
}

// source is the words as written, for when they are not expanded.
func (w *walker) source(words []*syntax.Word) []string {
	f := make([]string, 0, len(words))
	for _, wd := range words {
		f = append(f, printWord(wd))
	}
	return f
}

func printWord(wd *syntax.Word) string {
	var b bytes.Buffer
	syntax.NewPrinter().Print(&b, wd)
	return b.String()
}

// declare is export, declare, local, readonly and typeset: each name given is set (with a value)
// and in the environment of what runs next, but for export -n, which takes it out.
func (w *walker) declare(d *syntax.DeclClause) {
	unexport := false
	for _, as := range d.Args {
		if as.Name == nil && as.Value != nil { // a flag: export -n, declare -x
			unexport = unexport || d.Variant.Value == "export" && strings.Contains(as.Value.Lit(), "n")
		}
	}
	for _, as := range d.Args {
		if as.Name == nil {
			continue
		}
		w.assign(as)
		if unexport {
			w.st.unsetEnv(as.Name.Value)
		} else {
			w.st.setEnv(as.Name.Value)
		}
	}
}

func (w *walker) assign(as *syntax.Assign) {
	if as.Name == nil || as.Value == nil {
		return
	}
	v := strings.Join(w.fields([]*syntax.Word{as.Value}), " ")
	if len(v) > maxValueBytes {
		w.a.exceed(fmt.Sprintf("a value expands to more than %d bytes", maxValueBytes))
		v = v[:maxValueBytes]
	}
	w.vars[as.Name.Value] = v
	w.a.Assigns = append(w.a.Assigns, as.Name.Value+"="+v)
}

func (w *walker) redirects(st *syntax.Stmt) {
	for _, r := range st.Redirs {
		if r.Word == nil {
			continue
		}
		target := strings.Join(w.fields([]*syntax.Word{r.Word}), " ")
		if strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/") {
			w.a.Net = append(w.a.Net, target) // bash opens a connection
			if (r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut) && (r.N == nil || r.N.Value == "0") || r.Op == syntax.RdrAll {
				w.a.NetIn = true
			}
			continue
		}
		if r.Op == syntax.DplOut && target == "1" && r.N != nil && r.N.Value == "0" && len(w.a.Net) > 0 {
			w.a.NetIn = true // >& /dev/tcp/… 0>&1: the connection is stdin too
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut:
			if !strings.HasPrefix(target, "/dev/") && !isFD(target) {
				if !w.noteWritten(st, target) {
					if w.a.Opaque == nil {
						w.a.Opaque = map[string]bool{}
					}
					w.a.Opaque[target] = true
				}
				w.a.Writes = append(w.a.Writes, target)
			}
		case syntax.RdrIn:
			w.a.Reads = append(w.a.Reads, target)
		}
	}
}

// noteWritten remembers what a redirection writes to a file when it is known: a download or a
// decoded blob (its source), or literal text (the text); it reports whether the text is known.
func (w *walker) noteWritten(st *syntax.Stmt, target string) bool {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) == 0 {
		return false
	}
	if text, ok := w.foldCalls([]*syntax.CallExpr{c}); ok {
		if w.a.Scripts == nil {
			w.a.Scripts = map[string]string{}
		}
		w.a.Scripts[target] += text // >> appends; > then >> in one line writes both
		return true
	}
	name := w.callName(c)
	if IsDownloader(name) {
		if w.a.Fetched == nil {
			w.a.Fetched = map[string]string{}
		}
		w.a.Fetched[target] = name
	}
	return false
}

// WrittenText is all the text the command's redirections write to target, when every one of them
// is known literal text.
func (a *Analysis) WrittenText(target string) (string, bool) {
	text, ok := a.Scripts[target]
	return text, ok && !a.Opaque[target]
}

// WritesOrdinaryConfig reports a file (target as the command names it, p canonical) that the
// command gives only known text, which is an ordinary configuration of its kind (a PATH line for
// ~/.zshrc; see ReadConfigFile).
func (a *Analysis) WritesOrdinaryConfig(target, p string) bool {
	text, ok := a.WrittenText(target)
	if !ok {
		return false
	}
	cf, ok := ReadConfigFile(p, text)
	return ok && cf.Ordinary()
}

// teeWrites records what tee writes to its files when the command line makes it: a here-string,
// a heredoc, or a pipeline of literals (echo … | tee -a CLAUDE.md).
func (w *walker) teeWrites(cmd Command, c *syntax.CallExpr) {
	var text string
	var ok bool
	if st := w.stmtOf(c); st != nil {
		text, ok = heredoc(st)
	}
	if !ok && w.pipeFrom[c] != nil {
		text, ok = w.foldCalls([]*syntax.CallExpr{w.pipeFrom[c]})
	}
	if !ok {
		for _, op := range Operands(cmd.Args) {
			if w.a.Opaque == nil {
				w.a.Opaque = map[string]bool{}
			}
			w.a.Opaque[op] = true
		}
		return
	}
	for _, op := range Operands(cmd.Args) {
		if w.a.Scripts == nil {
			w.a.Scripts = map[string]string{}
		}
		w.a.Scripts[op] += text
	}
}

var fdRE = lazyregexp.New(`^&?[0-9-]+$`)

func isFD(s string) bool { return fdRE.MatchString(s) }

// heredoc returns the text fed to a statement's stdin by <<, <<- or <<<.
func heredoc(st *syntax.Stmt) (string, bool) {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				return hdocText(r.Hdoc), true
			}
		case syntax.WordHdoc:
			if r.Word != nil {
				return unquote(printWord(r.Word)), true
			}
		}
	}
	return "", false
}

func hdocText(wd *syntax.Word) string {
	var b strings.Builder
	for _, p := range wd.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
			continue
		}
		var pb bytes.Buffer
		syntax.NewPrinter().Print(&pb, p)
		b.Write(pb.Bytes())
	}
	return b.String()
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

func (w *walker) call(c *syntax.CallExpr) {
	if len(c.Args) > 0 && len(c.Assigns) > 0 {
		// X=1 cmd: X holds for cmd (and what it runs) only, not for the commands after it.
		saved := map[string]*string{}
		for _, as := range c.Assigns {
			if as.Name != nil {
				if v, ok := w.vars[as.Name.Value]; ok {
					saved[as.Name.Value] = &v
				} else {
					saved[as.Name.Value] = nil
				}
			}
		}
		defer func() {
			for k, v := range saved {
				if v == nil {
					delete(w.vars, k)
				} else {
					w.vars[k] = *v
				}
			}
		}()
	}
	for _, as := range c.Assigns {
		w.assign(as)
		if len(c.Args) == 0 && as.Name != nil {
			w.st.setEnv(as.Name.Value) // X=1 on its own: the programs after it may see it
		}
	}
	if len(c.Args) == 0 {
		return
	}
	decoded := w.decodedSubsts
	f := w.fields(c.Args)
	decoded = w.decodedSubsts - decoded
	if len(f) == 0 || f[0] == "exec" && (len(f) == 1 || len(f) == 2 && f[1] == "-c") {
		return // nothing, or exec changing the shell's own descriptors (see openFDs)
	}
	var assigns []string
	for _, as := range c.Assigns {
		if as.Name != nil {
			assigns = append(assigns, as.Name.Value+"="+w.vars[as.Name.Value])
		}
	}
	if v, ok := w.a.aliases[f[0]]; ok && w.depth < maxDepth { // an alias the command defined
		f = append(strings.Fields(v), f[1:]...)
	}
	cmd := w.unwrap(f, assigns)
	if cmd.Name == "" {
		return
	}
	w.environ(&cmd)
	cmd.From = w.from
	cmd.PipedFrom, cmd.PipesTo = w.piped[c], w.pipesTo[c]
	cmd.FDs = fdsUsed(w.stmtFDs[w.stmtOf(c)], cmd.Args)
	for _, wd := range c.Args[1:] {
		if unquotedGlob(wd) {
			cmd.Globs = append(cmd.Globs, w.fields([]*syntax.Word{wd})...)
		}
	}
	cmd.Cond = w.cond[c] || w.depth > 0 // nested code's order is not followed: never certain
	if cmd.Name == "read" || cmd.Name == "mapfile" || cmd.Name == "readarray" || cmd.Name == "socat" {
		cmd.FDs = w.stmtFDs[w.stmtOf(c)] // -u N, FD:N name any of them
	}
	if fanned := slices.Contains(cmd.Wrappers, "xargs") || slices.Contains(cmd.Wrappers, "parallel") && !slices.Contains(f, ":::"); fanned && w.pipeFrom[c] != nil {
		// echo / | xargs rm -rf: the command gets what the pipe brings, in place of -I's
		// string or after its arguments (xargs sh -c with no replace string: the input is code,
		// judged as such by stdinCode)
		repl := xargsReplace(f)
		if slices.Contains(cmd.Wrappers, "parallel") {
			repl = "{}"
		}
		if text, ok := w.foldCalls([]*syntax.CallExpr{w.pipeFrom[c]}); ok && (repl != "" || !shells.Has(cmd.Name) && interpreters.Get()[cmd.Name] == "") {
			if strings.TrimSpace(text) == "" && xargsSkipsEmpty(f) {
				return // printf '' | xargs -r rm -rf /: nothing comes, nothing runs
			}
			lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' })
			if repl == "" {
				lines = strings.Fields(text)
			}
			cmd.Args = fanOut(cmd.Args, lines, repl)
		}
	}
	for up, n := w.pipeFrom[c], 0; up != nil && n < 16; up, n = w.pipeFrom[up], n+1 {
		uc := Command{}
		if f := w.fields(up.Args); len(f) > 0 {
			uc = w.unwrap(f, nil)
		}
		cmd.Upstream = append(cmd.Upstream, uc.Name)
		cmd.UpstreamCmds = append(cmd.UpstreamCmds, uc)
	}
	_, cmd.Function = w.a.funcs[cmd.Name]
	if _, ok := w.funcDecls[cmd.Name]; ok && !w.inFunc[c] && w.spawnCycle(cmd.Name) {
		w.a.ForkBomb = true // a(){ b & }; b(){ a; }; a — with the functions defined by now
	}
	// A name from an expansion is dynamic only while it stays unknown: a variable the command
	// set, or a substitution that folds, is known.
	cmd.FromVar = isDynamicWord(c.Args[0])
	cmd.Dynamic = cmd.FromVar && !strings.Contains(f[0], "/") && strings.Contains(f[0], "$")
	if cmd.Dynamic {
		w.a.Dynamic = append(w.a.Dynamic, "command name comes from an expansion: "+printWord(c.Args[0]))
	}
	if len(w.a.Commands) >= maxCommands {
		w.a.exceed(fmt.Sprintf("more than %d commands", maxCommands))
		return
	}
	w.envCommands(&cmd)
	w.a.Commands = append(w.a.Commands, cmd)
	w.defines(cmd)
	w.readHere(cmd, w.stmtOf(c))
	w.nested(cmd, w.stmtOf(c))
	w.runs(cmd)
	w.stdinCode(cmd, c)
	w.throughFDs(&w.a.Commands[len(w.a.Commands)-1], c)
	w.runsFetched(cmd)
	if cmd.Name == "tee" {
		w.teeWrites(cmd, c)
	}
	if decoded > 0 && (shells.Has(cmd.Name) || cmd.Name == "eval" || interpreters.Get()[cmd.Name] != "") && !NoExec(&cmd) {
		w.a.Obfuscated = append(w.a.Obfuscated, cmd.Name+" runs what a decoder makes of data the command does not show")
	}
}

// unquotedGlob reports a word with a pattern character outside quotes and not escaped.
func unquotedGlob(wd *syntax.Word) bool {
	for _, p := range wd.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			continue
		}
		for i := 0; i < len(l.Value); i++ {
			switch l.Value[i] {
			case '\\':
				i++
			case '*', '?', '[':
				return true
			}
		}
	}
	return false
}

// xargsSkipsEmpty reports xargs -r (--no-run-if-empty) before the command it runs.
func xargsSkipsEmpty(f []string) bool {
	i := slices.Index(f, "xargs")
	for _, a := range f[i+1:] {
		if !strings.HasPrefix(a, "-") {
			return false
		}
		if a == "--no-run-if-empty" || !strings.HasPrefix(a, "--") && strings.Contains(a, "r") {
			return true
		}
	}
	return false
}

// stdinCode analyses the code a shell or an interpreter reads from a pipe when the pipeline makes
// it from literals: echo 'rm -rf /' | sh, printf cm0= | base64 -d | bash.
func (w *walker) stdinCode(cmd Command, c *syntax.CallExpr) {
	shell := shells.Has(cmd.Name)
	if !shell && interpreters.Get()[cmd.Name] == "" || w.pipeFrom[c] == nil || NoExec(&cmd) {
		return
	}
	if _, ok := FlagValue(cmd.Args, "-c"); ok || len(Operands(cmd.Args)) > 0 && Operands(cmd.Args)[0] != "-" {
		return // the code is elsewhere
	}
	var calls []*syntax.CallExpr
	for up := w.pipeFrom[c]; up != nil && len(calls) < 16; up = w.pipeFrom[up] {
		calls = append([]*syntax.CallExpr{up}, calls...)
	}
	text, ok := w.foldCalls(calls)
	if !ok {
		return
	}
	if shell {
		w.a.shell(text, w.depth+1, w.scope())
	} else {
		w.a.interp(cmd.Name, text, w)
	}
}

// envCommands analyses what a command's environment makes it run (GIT_SSH_COMMAND, PAGER…), and
// hands tar the options TAR_OPTIONS gives it.
func (w *walker) envCommands(cmd *Command) {
	value := func(name string) (string, bool) {
		for _, a := range cmd.Assigns {
			if k, v, ok := strings.Cut(a, "="); ok && k == name {
				return v, true
			}
		}
		v, ok := w.vars[name]
		return v, ok && v != ""
	}
	for _, name := range envCommandVars.Names() {
		if v, ok := value(name); ok && strings.ContainsAny(v, " ;|&$`") && !w.a.envSeen[v] {
			if w.a.envSeen == nil {
				w.a.envSeen = map[string]bool{}
			}
			w.a.envSeen[v] = true // once: the nested commands inherit the same environment
			w.a.shell(v, w.depth+1, w.scope())
		}
	}
	if cmd.Name == "tar" || cmd.Name == "gtar" {
		if v, ok := value("TAR_OPTIONS"); ok {
			cmd.Args = append(w.splitWords(v), cmd.Args...)
		}
	}
}

// splitWords splits text into words as the shell would (quotes honoured, nothing expanded that
// the walker does not know).
func (w *walker) splitWords(s string) []string {
	f, err := w.a.parse(": " + s)
	if err != nil || len(f.Stmts) != 1 {
		return strings.Fields(s)
	}
	c, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) < 1 {
		return strings.Fields(s)
	}
	return w.fields(c.Args[1:])
}

// readHere sets the variable read takes from a here-string: read TOOL <<< rm.
func (w *walker) readHere(cmd Command, st *syntax.Stmt) {
	if cmd.Name != "read" || st == nil {
		return
	}
	ops := Operands(cmd.Args)
	if len(ops) != 1 {
		return
	}
	for _, r := range st.Redirs {
		if r.Op == syntax.WordHdoc && r.Word != nil {
			if f := w.fields([]*syntax.Word{r.Word}); len(f) > 0 {
				w.vars[ops[0]] = strings.Join(f, " ")
			}
		}
	}
}

// defines records aliases the command sets, and analyses a call of a function it defined with
// the call's arguments in place of $1, $2, $@.
func (w *walker) defines(cmd Command) {
	switch cmd.Name {
	case "unset": // ${x:-default} then takes the default
		for _, op := range Operands(cmd.Args) {
			w.vars[op] = ""
			w.st.unsetEnv(op)
		}
	case "cd", "pushd", "chdir":
		w.st.chdir(strings.Join(Operands(cmd.Args), " ")) // in a branch too: it may move
	case "popd":
		w.st.dir = "$OLDPWD"
	case "export": // export X=1 written so that the parser does not see a declaration (\export)
		for _, a := range Operands(cmd.Args) {
			name, value, ok := strings.Cut(a, "=")
			if ok {
				w.vars[name] = value
			}
			w.st.setEnv(name)
		}
	case "printf": // printf -v VAR FORMAT ARGS sets VAR
		if len(cmd.Args) >= 3 && cmd.Args[0] == "-v" {
			if out, ok := printfOutput(cmd.Args[2], cmd.Args[3:]); ok {
				w.vars[cmd.Args[1]] = out
			}
		}
	case "declare", "typeset", "local":
		if len(cmd.Args) >= 2 && strings.Contains(cmd.Args[0], "n") && strings.HasPrefix(cmd.Args[0], "-") {
			for _, a := range cmd.Args[1:] { // a name reference: the variable it names
				if ref, target, ok := strings.Cut(a, "="); ok {
					if v, known := w.vars[target]; known {
						w.vars[ref] = v
					}
				}
			}
		}
	}
	if cmd.Name == "hash" && len(cmd.Args) >= 3 && cmd.Args[0] == "-p" {
		// hash -p /bin/rm wipe: wipe now runs /bin/rm, like an alias of it
		if w.a.aliases == nil {
			w.a.aliases = map[string]string{}
		}
		for _, name := range cmd.Args[2:] {
			if builtins.Has(name) && !w.a.disabled[name] {
				w.a.hashed = setKey(w.a.hashed, name, cmd.Args[1]) // the builtin runs first, until enable -n
				continue
			}
			w.a.aliases[name] = cmd.Args[1]
		}
		return
	}
	if cmd.Name == "enable" && len(cmd.Args) >= 2 && cmd.Args[0] == "-n" {
		for _, name := range cmd.Args[1:] {
			w.a.disabled = setKey(w.a.disabled, name, true)
			if p, ok := w.a.hashed[name]; ok {
				if w.a.aliases == nil {
					w.a.aliases = map[string]string{}
				}
				w.a.aliases[name] = p
			}
		}
		return
	}
	if cmd.Name == "alias" {
		for _, a := range cmd.Args {
			if name, value, ok := strings.Cut(a, "="); ok && name != "" {
				if w.a.aliases == nil {
					w.a.aliases = map[string]string{}
				}
				w.a.aliases[name] = value
			}
		}
		return
	}
	body, ok := w.a.funcs[cmd.Name]
	if !ok || len(cmd.Wrappers) > 0 {
		return
	}
	vars := make(map[string]string, len(w.vars)+len(cmd.Args)+2)
	for k, v := range w.vars {
		vars[k] = v
	}
	for i, a := range cmd.Args {
		vars[strconv.Itoa(i+1)] = a
	}
	vars["@"], vars["*"] = strings.Join(cmd.Args, " "), strings.Join(cmd.Args, " ")
	w.a.shell(body, w.depth+1, scope{vars: vars, st: w.st, from: w.from})
}

// stmtOf finds the statement of a call, for its heredoc.
func (w *walker) stmtOf(c *syntax.CallExpr) *syntax.Stmt { return w.lastStmt[c] }

func isDynamicWord(wd *syntax.Word) bool {
	return dynamicParts(wd.Parts)
}

func dynamicParts(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp, *syntax.ArithmExp:
			return true
		case *syntax.DblQuoted:
			if dynamicParts(p.Parts) {
				return true
			}
		}
	}
	return false
}

// unwrap looks through wrappers to the command they run.
func (w *walker) unwrap(f []string, assigns []string) Command {
	cmd := Command{Assigns: assigns}
	var lastArgs []string
	for len(f) > 0 {
		name := baseName(f[0])
		if name == "env" {
			f = splitEnvS(f) // env -S "rm -rf ~" runs rm -rf ~
		}
		if name == "parallel" { // parallel CMD ::: ARGS runs CMD with each of ARGS
			tmpl, inputs, repl, ok := parallelParts(f[1:])
			if ok || len(tmpl) > 0 {
				f = fanOut(tmpl, inputs, repl)
				cmd.Wrappers = append(cmd.Wrappers, "parallel")
				continue
			}
		}
		skip, ok := wrapperArgs(name, f[1:], &cmd)
		if !ok {
			break
		}
		cmd.Wrappers = append(cmd.Wrappers, name)
		lastArgs = f[1 : 1+skip]
		f = f[1+skip:]
	}
	if len(f) == 0 {
		if len(cmd.Wrappers) > 0 { // `sudo` alone, `env -i` alone: the wrapper is the command
			cmd.Name = cmd.Wrappers[len(cmd.Wrappers)-1]
			cmd.Wrappers = cmd.Wrappers[:len(cmd.Wrappers)-1]
			cmd.Args = lastArgs
		}
		return cmd
	}
	cmd.Name = canonicalProgram(baseName(f[0]))
	if strings.Contains(f[0], "/") {
		cmd.Exe = f[0]
	}
	if g := resolveGlob(f[0]); g != "" {
		cmd.Name = g // /bin/r? and /???/?m run a system program: judged as the worst it can be
	}
	cmd.Args = f[1:]
	return cmd
}

// splitEnvS replaces env's -S STRING (--split-string) by the words of STRING.
func splitEnvS(f []string) []string {
	for i := 1; i < len(f); i++ {
		a := f[i]
		var s string
		switch {
		case (a == "-S" || a == "--split-string") && i+1 < len(f):
			s = f[i+1]
			return append(append(slices.Clone(f[:i]), strings.Fields(s)...), f[i+2:]...)
		case strings.HasPrefix(a, "--split-string="):
			s = strings.TrimPrefix(a, "--split-string=")
		case strings.HasPrefix(a, "-S") && len(a) > 2:
			s = a[2:]
		case !strings.HasPrefix(a, "-"):
			return f
		default:
			continue
		}
		return append(append(slices.Clone(f[:i]), strings.Fields(s)...), f[i+1:]...)
	}
	return f
}

func baseName(s string) string {
	s = strings.TrimLeft(s, `\`)
	if strings.Contains(s, "/") && !strings.HasPrefix(s, "$(") {
		s = path.Base(s)
	}
	return strings.ToLower(s)
}

var timeoutDuration = lazyregexp.New(`^[0-9.]+[smhd]?$`)

func wrapperArgs(name string, args []string, cmd *Command) (int, bool) {
	switch name {
	case "sudo", "doas", "env", "nice", "ionice", "timeout", "exec", "xargs", "stdbuf", "nohup", "time", "command", "builtin", "caffeinate",
		"busybox", "toybox", // an applet runs as the program it is named after
		"setsid", "unbuffer", "nsenter", "unshare", "systemd-run", "firejail", "proxychains", "proxychains4", "torsocks", "chronic",
		"strace", "ltrace", "valgrind", "dtruss", "catchsegv", "eatmydata", "fakeroot", "nocache", "pv":
	case "runuser":
		if !slices.Contains(args, "-u") && !slices.Contains(args, "--user") {
			return 0, false // runuser USER -c CMD: the command is -c's (see the capability table)
		}
	case "flock", "chroot", "taskset", "chrt", "sg":
		// one operand (a lock file, a root, a CPU mask, a priority, a group, a user) comes first
		i := 0
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			i++
		}
		if i+1 < len(args) {
			return i + 1, true
		}
		return 0, false
	default:
		return 0, false
	}
	if name == "command" && len(args) > 0 && (args[0] == "-v" || args[0] == "-V") {
		return 0, false // a lookup, not an execution: `command` itself is the command
	}
	i := 0
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			return i + 1, true
		case name == "env" && strings.Contains(a, "=") && !strings.HasPrefix(a, "-"):
			cmd.Assigns = append(cmd.Assigns, a)
		case name == "env" && (a == "-" || a == "-i" || a == "--ignore-environment"): // env - CMD: env -i CMD
			cmd.ClearsEnv = true
		case name == "env" && (a == "-u" || a == "--unset") && i+1 < len(args):
			cmd.Unsets = append(cmd.Unsets, args[i+1])
			i++
		case name == "env" && (a == "-C" || a == "--chdir") && i+1 < len(args):
			cmd.Dir = args[i+1]
			i++
		case name == "env" && strings.HasPrefix(a, "--chdir="):
			cmd.Dir = strings.TrimPrefix(a, "--chdir=")
		case name == "env" && strings.HasPrefix(a, "--unset="):
			cmd.Unsets = append(cmd.Unsets, strings.TrimPrefix(a, "--unset="))
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if wrapperOptsWithValue.Get()[name][a] {
				i++
			}
		case name == "timeout" && timeoutDuration.MatchString(a):
			return i + 1, true
		default:
			return i, true
		}
		i++
	}
	return i, true
}

// nested analyses what a command runs in turn: shell -c strings, eval, find -exec, heredocs and
// interpreter code.
func (w *walker) nested(cmd Command, st *syntax.Stmt) {
	a := w.a
	for _, s := range execStrings(&cmd) {
		a.shell(s, w.depth+1, w.scope())
	}
	switch {
	case shells.Has(cmd.Name) && NoExec(&cmd):
		// bash -n reads without running: nothing it is given runs
	case shells.Has(cmd.Name):
		if ops := Operands(cmd.Args); len(ops) > 0 && a.Scripts[ops[0]] != "" {
			a.shell(a.Scripts[ops[0]], w.depth+1, w.scope()) // echo 'rm -rf /' > x.sh; sh x.sh
		}
		if code, ok := FlagValue(cmd.Args, "-c"); ok {
			if strings.Contains(code, "{}") {
				a.Dynamic = append(a.Dynamic, cmd.Name+" -c with code a placeholder fills at run time")
			}
			a.shell(code, w.depth+1, w.scope())
		} else if slices.Contains(cmd.Args, "-c") {
			a.Dynamic = append(a.Dynamic, cmd.Name+" -c with its code only known at run time")
		} else if st != nil {
			if body, ok := heredoc(st); ok {
				a.shell(body, w.depth+1, w.scope())
			}
		}
	case cmd.Name == "eval":
		a.shell(strings.Join(cmd.Args, " "), w.depth+1, w.scope())
		if strings.Contains(strings.Join(cmd.Args, " "), "$") {
			a.Dynamic = append(a.Dynamic, "eval of text only known at run time")
		}
	case cmd.Name == "source" || cmd.Name == ".":
		if len(cmd.Args) > 0 && strings.Contains(cmd.Args[0], "$") {
			a.Dynamic = append(a.Dynamic, "source of a path only known at run time")
		}
	case cmd.Name == "find":
		w.findExec(cmd.Args)
	case awks.Has(cmd.Name):
		if ops := Operands(cmd.Args); len(ops) > 0 && len(OptionValues(cmd.Args, "-f", "--file")) == 0 {
			a.scanCode(cmd.Name, ops[0], w) // the program is the first operand
		}
	case cmd.Name == "sed" || cmd.Name == "gsed":
		if sedExecutes(cmd.Args) {
			a.Dynamic = append(a.Dynamic, "sed runs a command its script builds (the e command or flag)")
		}
	case cmd.Name == "ssh":
		if remote := sshCommand(cmd.Args); remote != "" {
			a.shell(remote, w.depth+1, w.scope())
		}
	case interpreters.Get()[cmd.Name] != "":
		if code, ok := FlagValue(cmd.Args, interpreters.Get()[cmd.Name]); ok {
			a.interp(cmd.Name, code, w)
		} else if st != nil {
			if body, ok := heredoc(st); ok {
				a.interp(cmd.Name, body, w)
			}
		}
	}
}

// SSHHost returns the host ssh connects to: its first operand.
func SSHHost(args []string) string {
	withValue := "pilLoFJRDbceEmOSWwB"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			continue
		case strings.HasPrefix(a, "-"):
			if len(a) == 2 && strings.ContainsRune(withValue, rune(a[1])) {
				i++
			}
		default:
			return a
		}
	}
	return ""
}

// sshCommand returns the command ssh runs on the remote host: what follows the host.
func sshCommand(args []string) string {
	withValue := "pilLoFJRDbceEmOSWwB"
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			continue
		}
		if strings.HasPrefix(a, "-") {
			if len(a) == 2 && strings.ContainsRune(withValue, rune(a[1])) {
				i++
			}
			continue
		}
		return strings.Join(args[i+1:], " ") // args[i] is the host
	}
	return ""
}

// findRoots puts find's starting points where -exec's arguments say {}.
func findRoots(args, sub []string) []string {
	var roots []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "(") || a == "!" {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var out []string
	for _, s := range sub {
		if s == "{}" {
			for _, r := range roots {
				if strings.HasPrefix(r, "/") || strings.HasPrefix(r, "~") {
					out = append(out, r) // find / -exec rm -rf {} + : as good as rm -rf /
				} else {
					out = append(out, strings.TrimSuffix(r, "/")+"/{}") // what lies below the project
				}
			}
		} else {
			out = append(out, s)
		}
	}
	return out
}

func (w *walker) findExec(args []string) {
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			var sub []string
			for i++; i < len(args) && args[i] != ";" && args[i] != "+"; i++ {
				sub = append(sub, args[i])
			}
			if len(sub) > 0 {
				sub = findRoots(args, sub) // {} is each file found: judged as the starting points
				cmd := w.unwrap(sub, nil)
				cmd.Wrappers = append(cmd.Wrappers, "find")
				w.a.Commands = append(w.a.Commands, cmd)
				w.nested(cmd, nil)
			}
		}
	}
}

// shellCall finds strings that interpreter code hands to a shell: os.system("..."),
// execSync('...'), subprocess.run(["rm", "-rf", "/"]), `...` in Ruby and Perl.
var shellCall = lazyregexp.New("(?:system|exec|execSync|spawn|spawnSync|popen|Popen|call|run|check_output|check_call|getoutput|getstatusoutput)\\s*\\(\\s*(\\[[^\\]]*\\]|\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*')|`([^`]*)`|%x\\{([^}]*)\\}")

var quotedString = lazyregexp.New(`"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'`)

// concatenated is two string literals joined by +, in one kind of quotes or the other: code
// that spells a program's name in parts ('cl' + 'aude') runs the whole name.
var concatenated = lazyregexp.New(`(?:'([^'\\\n]*)'|"([^"\\\n]*)")\s*\+\s*(?:'([^'\\\n]*)'|"([^"\\\n]*)")`)

// adjacentLiterals are literals written side by side, which Python and Ruby join ("cl" "aude"):
// only as a whole argument or value (after an opening bracket, a comma or =, up to a closing one
// or a comma), so that quotes inside another literal ("echo 'a' 'b'") are left as they are.
var adjacentLiterals = lazyregexp.New(`([(\[,=]\s*)((?:(?:'[^'\\\n]*'|"[^"\\\n]*")[ \t]+)+(?:'[^'\\\n]*'|"[^"\\\n]*"))(\s*[)\],])`)

// reversedLiteral is a literal reversed by a slice ('edualc'[::-1]); joinedList a list of
// literals joined with nothing ("".join(['cl', 'aude']), ['cl', 'aude'].join("")).
var (
	reversedLiteral = lazyregexp.New(`(?:'([^'\\\n]*)'|"([^"\\\n]*)")\[::-1\]`)
	joinedList      = lazyregexp.New(`(?:''|"")\.join\(\s*[\[(]((?:\s*(?:'[^'\\\n]*'|"[^"\\\n]*")\s*,?)+)[\])]\s*\)|\[((?:\s*(?:'[^'\\\n]*'|"[^"\\\n]*")\s*,?)+)\]\.join\(\s*(?:''|"")\s*\)`)
)

// joinLiterals writes each literal that code builds from literals (joined, concatenated,
// reversed) as the one literal it makes, within bounds.
func joinLiterals(code string) string {
	if strings.Contains(code, "[::-1]") {
		code = reversedLiteral.ReplaceAllStringFunc(code, func(m string) string {
			g := reversedLiteral.FindStringSubmatch(m)
			if !utf8.ValidString(g[1] + g[2]) {
				return m
			}
			r := []rune(g[1] + g[2])
			slices.Reverse(r)
			return quoteLiteral(string(r), m)
		})
	}
	if strings.Contains(code, ".join(") {
		code = joinedList.ReplaceAllStringFunc(code, func(m string) string {
			g := joinedList.FindStringSubmatch(m)
			var b strings.Builder
			for _, q := range quotedString.FindAllStringSubmatch(g[1]+g[2], -1) {
				b.WriteString(q[1] + q[2])
			}
			return quoteLiteral(b.String(), m)
		})
	}
	if strings.ContainsAny(code, " \t") {
		code = adjacentLiterals.ReplaceAllStringFunc(code, func(m string) string {
			g := adjacentLiterals.FindStringSubmatch(m)
			var b strings.Builder
			for _, q := range quotedString.FindAllStringSubmatch(g[2], -1) {
				b.WriteString(q[1] + q[2])
			}
			return g[1] + quoteLiteral(b.String(), g[2]) + g[3]
		})
	}
	if !strings.Contains(code, "+") {
		return code
	}
	for range 64 {
		next := concatenated.ReplaceAllStringFunc(code, func(m string) string {
			g := concatenated.FindStringSubmatch(m)
			return quoteLiteral(g[1]+g[2]+g[3]+g[4], m)
		})
		if next == code {
			break
		}
		code = next
	}
	return code
}

// quoteLiteral writes s as one literal, in whichever quotes it holds none of; else the code as
// it was (orig).
func quoteLiteral(s, orig string) string {
	if !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return orig
}

func (a *Analysis) interp(name, code string, w *walker) {
	code = joinLiterals(code)
	a.Code = append(a.Code, Code{Interp: name, Text: code})
	a.scanCode(name, code, w)
	for _, m := range shellCall.FindAllStringSubmatch(code, -1) {
		arg := m[1] + m[2] + m[3]
		if strings.HasPrefix(arg, "[") { // an argv list: join its strings
			var parts []string
			for _, q := range quotedString.FindAllStringSubmatch(arg, -1) {
				parts = append(parts, q[1]+q[2])
			}
			a.shell(strings.Join(parts, " "), w.depth+1, w.scope())
			continue
		}
		a.shell(unquote(arg), w.depth+1, w.scope())
	}
}

// String summarises an analysis for debugging and `check`.
// ReleaseParser hands back the parser the analysis used (AnalyzeWith's, or its own), for the
// caller to reuse, and forgets it.
func (a *Analysis) ReleaseParser() *syntax.Parser {
	p := a.parser
	a.parser = nil
	return p
}

// String lists the commands reached, quoted, for tests and debugging.
func (a *Analysis) String() string {
	var b strings.Builder
	for _, c := range a.Commands {
		fmt.Fprintf(&b, "%q ", c.Line())
	}
	return strings.TrimSpace(b.String())
}
