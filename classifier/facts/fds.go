package facts

import (
	"maps"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// File descriptors a command opens for itself (exec 3>/dev/tcp/host/port, exec {fd}< <(curl …),
// exec 3<<<'code') hide where data goes and where code comes from behind a number. The walker
// keeps a table of them, as bash does, so that a later >&3, <&$fd, /dev/fd/3 or
// /proc/self/fd/$fd is seen for what it is.

// FDSource is what one descriptor is open on. At most one field is set.
type FDSource struct {
	Net  string // a connection: /dev/tcp/host/port
	from string // the program a process substitution runs: curl in <(curl …)
	File string // a file
	Text string // literal text from a here-document or here-string
	Lit  bool   // text is set (and may be empty)
	// appends: the file is opened to append (>>), which keeps what it held.
	Appends bool
}

// FDTable maps a descriptor number to what it is open on.
type FDTable map[string]FDSource

// firstNamedFD is the first number bash gives a {name}> redirection.
const firstNamedFD = 10

// maxFDs bounds the table: a command opening more is not one anybody writes by hand.
const maxFDs = 64

// fdArg matches an argument naming a descriptor of the shell itself: /dev/fd/3,
// /proc/self/fd/3, /proc/thread-self/fd/3, /dev/stdin.
var fdArg = lazyregexp.New(`^/(?:dev|proc/(?:self|thread-self))/fd/([0-9]+)$`)

// openFDs applies a statement's redirections to the descriptor table. Those of `exec` with no
// command, and {name} ones (bash keeps them open after the command), last beyond the statement;
// the others hold for the statement's command only. It returns the statement's own table.
func (w *walker) openFDs(st *syntax.Stmt) FDTable {
	if len(st.Redirs) == 0 {
		return w.fds
	}
	persist := isBareExec(st)
	t := maps.Clone(w.fds)
	if t == nil {
		t = FDTable{}
	}
	for _, r := range st.Redirs {
		n, named := w.redirFD(r)
		w.applyRedir(t, n, r)
		if (persist || named) && len(w.fds) < maxFDs {
			if w.fds == nil {
				w.fds = FDTable{}
			}
			if src, ok := t[n]; ok {
				w.fds[n] = src
			} else {
				delete(w.fds, n)
			}
		}
	}
	if persist {
		w.fds = t
	}
	return t
}

// redirFD is the descriptor a redirection acts on; named reports a {name} one, whose number is
// set in the variable as bash does.
func (w *walker) redirFD(r *syntax.Redirect) (n string, named bool) {
	if r.N == nil {
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			return "0", false
		}
		return "1", false
	}
	name, ok := strings.CutPrefix(r.N.Value, "{")
	if !ok || !strings.HasSuffix(name, "}") {
		return r.N.Value, false
	}
	name = strings.TrimSuffix(name, "}")
	if target := w.redirTarget(r); (r.Op == syntax.DplOut || r.Op == syntax.DplIn) && target == "-" {
		return w.vars[name], true // {fd}>&- closes the one the variable names
	}
	w.nextFD++
	n = strconv.Itoa(firstNamedFD - 1 + w.nextFD)
	w.vars[name] = n
	return n, true
}

func (w *walker) redirTarget(r *syntax.Redirect) string {
	if r.Word == nil {
		return ""
	}
	return strings.Join(w.fields([]*syntax.Word{r.Word}), " ")
}

func (w *walker) applyRedir(t FDTable, n string, r *syntax.Redirect) {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if _, ok := t[n]; !ok && len(t) >= maxFDs {
			return
		}
		if r.Hdoc != nil {
			t[n] = FDSource{Text: hdocText(r.Hdoc), Lit: true}
		}
		return
	case syntax.WordHdoc:
		if _, ok := t[n]; !ok && len(t) >= maxFDs {
			return
		}
		if r.Word != nil {
			t[n] = FDSource{Text: unquote(printWord(r.Word)), Lit: true}
		}
		return
	}
	target := w.redirTarget(r)
	switch r.Op {
	case syntax.DplOut, syntax.DplIn: // n>&m copies m; n>&m- moves it; n>&- closes n
		if target == "-" {
			delete(t, n)
			return
		}
		m, move := strings.CutSuffix(target, "-")
		if src, ok := t[m]; ok {
			t[n] = src
			if move {
				delete(t, m)
			}
		} else {
			delete(t, n) // a copy of something unknown, or of the terminal
		}
		return
	}
	if _, ok := t[n]; !ok && len(t) >= maxFDs {
		return // a table that large is no command anybody writes; what it hides stays unknown
	}
	var src FDSource
	switch {
	case strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/"):
		src.Net = target
	case procSubst(r.Word) != nil:
		src.from = w.procProgram(procSubst(r.Word))
	default:
		src.File = target
		src.Appends = r.Op == syntax.AppOut || r.Op == syntax.AppAll
	}
	t[n] = src
	if r.Op == syntax.RdrAll || r.Op == syntax.AppAll {
		t["2"] = src
	}
}

// isBareExec reports `exec` with redirections and no command: it changes the shell's own
// descriptors.
func isBareExec(st *syntax.Stmt) bool {
	c, ok := st.Cmd.(*syntax.CallExpr)
	return ok && len(c.Args) >= 1 && c.Args[0].Lit() == "exec" &&
		(len(c.Args) == 1 || len(c.Args) == 2 && c.Args[1].Lit() == "-c")
}

func procSubst(wd *syntax.Word) *syntax.ProcSubst {
	if wd == nil || len(wd.Parts) != 1 {
		return nil
	}
	ps, _ := wd.Parts[0].(*syntax.ProcSubst)
	return ps
}

// procProgram names the first program a process substitution runs.
func (w *walker) procProgram(ps *syntax.ProcSubst) string {
	for _, s := range ps.Stmts {
		if c := firstCall(s); c != nil {
			if f := w.fields(c.Args); len(f) > 0 {
				return w.unwrap(f, nil).Name
			}
		}
	}
	return ""
}

// FD returns what the command's descriptor n is open on.
func (c *Command) FD(n string) (FDSource, bool) {
	src, ok := c.FDs[n]
	return src, ok
}

// FDOf returns what an argument naming a descriptor (/dev/fd/3, /proc/self/fd/3, /dev/stdin)
// is open on.
func (c *Command) FDOf(arg string) (FDSource, bool) {
	n := ""
	switch arg {
	case "/dev/stdin":
		n = "0"
	case "/dev/stdout":
		n = "1"
	default:
		m := fdArg.FindStringSubmatch(arg)
		if m == nil {
			return FDSource{}, false
		}
		n = m[1]
	}
	return c.FD(n)
}

// fdsUsed is the part of a statement's table its command can reach through its own standard
// streams or arguments: kept small, since every command carries it.
func fdsUsed(t FDTable, args []string) FDTable {
	if len(t) == 0 {
		return nil
	}
	var out FDTable
	keep := func(n string) {
		if src, ok := t[n]; ok {
			if out == nil {
				out = FDTable{}
			}
			out[n] = src
		}
	}
	keep("0")
	keep("1")
	for _, a := range args {
		if m := fdArg.FindStringSubmatch(a); m != nil {
			keep(m[1])
		}
	}
	return out
}

// throughFDs follows what the command reads or runs through a descriptor the command line
// opened: a download saved by `curl >&3` where 3 is a file, code a shell reads from a
// here-string or a download on a descriptor, a line `read -u` takes from one.
func (w *walker) throughFDs(cmd *Command, c *syntax.CallExpr) {
	if len(cmd.FDs) == 0 {
		return
	}
	out, _ := cmd.FD("1")
	if out.File != "" && IsDownloader(cmd.Name) {
		if w.a.Fetched == nil {
			w.a.Fetched = map[string]string{}
		}
		w.a.Fetched[out.File] = cmd.Name // exec 3>x.sh; curl … >&3
	}
	if shells.Has(out.from) || interpreters.Get()[out.from] != "" { // exec {fd}> >(bash); curl … >&$fd
		if text, ok := w.foldCalls([]*syntax.CallExpr{c}); ok && shells.Has(out.from) {
			w.a.shell(text, w.depth+1, w.scope())
		} else if IsDownloader(cmd.Name) && len(w.a.Commands) < maxCommands {
			// The shell reading the descriptor is the pipe's reader: recorded as such.
			w.a.Commands = append(w.a.Commands, Command{Name: out.from, Upstream: []string{cmd.Name}, UpstreamCmds: []Command{*cmd}})
		}
	}
	switch {
	case cmd.Name == "read" || cmd.Name == "mapfile" || cmd.Name == "readarray":
		w.readFD(cmd)
	case shells.Has(cmd.Name) || cmd.Name == "source" || cmd.Name == "." || interpreters.Get()[cmd.Name] != "":
		src, ok := cmd.FD("0")
		if ops := Operands(cmd.Args); len(ops) > 0 && ops[0] != "-" {
			src, ok = cmd.FDOf(ops[0]) // the script is a descriptor: bash /dev/fd/3
		} else if cmd.Name == "source" || cmd.Name == "." {
			ok = false
		}
		if !ok || NoExec(cmd) {
			return
		}
		switch {
		case src.Lit && interpreters.Get()[cmd.Name] != "":
			w.a.interp(cmd.Name, src.Text, w)
		case src.Lit:
			w.a.shell(src.Text, w.depth+1, w.scope())
		case src.from != "":
			cmd.Upstream = append(cmd.Upstream, src.from) // bash <&3 where 3 is <(curl …)
		case src.Net != "":
			w.a.NetIn = true
		}
	}
}

// readFD sets the variable read -u N or mapfile -u N fills from a descriptor holding literal
// text: its first line (an array's first element, which is what ${rows[0]} and $rows give).
func (w *walker) readFD(cmd *Command) {
	var fd, name string
	args := cmd.Args
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-u" && i+1 < len(args):
			fd = args[i+1]
			i++
		case strings.HasPrefix(a, "-") && strings.Contains(a, "u"):
			if k := strings.IndexByte(a, 'u'); k == len(a)-1 && i+1 < len(args) {
				fd = args[i+1] // -tu FD
				i++
			} else {
				fd = a[k+1:] // -tuFD
			}
		case a == "-C" || a == "-c" || a == "-d" || a == "-n" || a == "-N" || a == "-p" || a == "-t" && cmd.Name == "read" || a == "-O" || a == "-s" || a == "-a":
			i++ // options with a value
		case !strings.HasPrefix(a, "-") && name == "":
			name = a
		}
	}
	src, ok := cmd.FD(fd)
	if name == "" {
		name = map[bool]string{true: "REPLY", false: "MAPFILE"}[cmd.Name == "read"]
	}
	if ok && IsDownloader(src.from) {
		w.fetchedVars = setKey(w.fetchedVars, name, src.from) // read -u 3 cmd, 3 on <(curl …)
		return
	}
	if !ok || !src.Lit {
		return
	}
	line, _, _ := strings.Cut(src.Text, "\n")
	w.vars[name] = line
}

// runsFetched records a command that runs text a download put in a variable (eval "$cmd" after
// read -u from <(curl …)) as the shell reading that download, which is what it is.
func (w *walker) runsFetched(cmd Command) {
	if len(w.fetchedVars) == 0 || !(cmd.Name == "eval" || shells.Has(cmd.Name) || cmd.Name == "source" || cmd.Name == ".") {
		return
	}
	text := strings.Join(cmd.Args, " ")
	for name, from := range w.fetchedVars {
		if strings.Contains(text, "$"+name) || strings.Contains(text, "${"+name) {
			if len(w.a.Commands) < maxCommands {
				w.a.Commands = append(w.a.Commands, Command{Name: "sh", Upstream: []string{from}, Cond: cmd.Cond})
			}
			return
		}
	}
}
