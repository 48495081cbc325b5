package facts

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Capabilities of programs, as data: what a program can do beyond its plain job (run a command
// handed in an option, write a file, fetch from the network, stop the machine...), and the forms
// of its arguments that make it do it. The table is capabilities.txt, which a test turns into
// capabilities_table.go (go test ./classifier/facts -run CapabilityTable -update): a table the
// compiler lays out in the binary, where reading the text cost every hook process a fiftieth of
// its time. This file only knows how to read a form, never a program.

// Capability names what a program can be made to do.
type Capability string

// The capabilities a row may name (see capabilities.txt).
const (
	CapShell        Capability = "shell"
	CapExec         Capability = "exec"
	CapWrite        Capability = "write"
	CapRead         Capability = "read"
	CapDownload     Capability = "download"
	CapFetch        Capability = "fetch"
	CapNetShell     Capability = "net-shell"
	CapStdinPaths   Capability = "stdin-paths"
	CapImpact       Capability = "impact"
	CapAccount      Capability = "account"
	CapServiceStop  Capability = "service-stop"
	CapSystemConfig Capability = "system-config"
	CapPrivilege    Capability = "privilege"
	CapLibrary      Capability = "library"
	CapCollect      Capability = "collect"
	CapRemoteAccess Capability = "remote-access"
	CapServe        Capability = "serve"
	CapMount        Capability = "mount"
	CapSQL          Capability = "sql"
	CapPublish      Capability = "publish"
	CapShare        Capability = "share"
)

// capRow is one row of the table: a capability of one program, the forms that trigger it, and
// what it acts on in words (for the effect's what=).
type capRow struct {
	cap   Capability
	forms []string
	What  string
}

// capProgram is a program's rows; capabilityTable holds them sorted by program.
type capProgram struct {
	prog string
	rows []capRow
}

// capabilities are the rows of program prog.
func capabilities(prog string) []capRow {
	i, ok := slices.BinarySearchFunc(capabilityTable, prog, func(p capProgram, prog string) int { return cmp.Compare(p.prog, prog) })
	if !ok {
		return nil
	}
	return capabilityTable[i].rows
}

// CapHit is a capability a command uses, and the values it acts on ("" when the form has none).
type CapHit struct {
	Cap    Capability
	What   string
	Values []string
}

// CapabilityHits are the capabilities a command uses, by the forms of its arguments.
func CapabilityHits(cmd *Command) []CapHit {
	var out []CapHit
	for _, row := range capabilities(cmd.Name) {
		var values []string
		hit := false
		for _, form := range row.forms {
			v, ok := formValues(cmd, form)
			hit = hit || ok
			values = append(values, v...)
		}
		if hit {
			out = append(out, CapHit{Cap: row.cap, What: row.What, Values: values})
		}
	}
	return out
}

// hasCapability reports whether a program has a capability in any form (a fetcher, a shell
// runner), whatever its arguments.
func hasCapability(prog string, c Capability) bool {
	return slices.ContainsFunc(capabilities(prog), func(r capRow) bool { return r.cap == c })
}

// formValues reports whether a command's arguments take a form, and the values the form names.
// Forms joined by & must all hold; the values are the last one's.
func formValues(cmd *Command, form string) ([]string, bool) {
	if first, rest, ok := strings.Cut(form, "&"); ok {
		if _, ok := formValues(cmd, first); !ok {
			return nil, false
		}
		return formValues(cmd, rest)
	}
	switch {
	case form == "stdin":
		text := stdinText(cmd)
		return text, len(text) > 0
	case strings.HasPrefix(form, "op:"):
		n, err := strconv.Atoi(form[len("op:"):])
		if ops := Operands(cmd.Args); err == nil && n >= 1 && n <= len(ops) {
			return []string{ops[n-1]}, true
		}
		return nil, false
	case form == "*":
		return Operands(cmd.Args), true
	case form == "rest":
		ops := Operands(cmd.Args)
		return []string{strings.Join(ops, " ")}, len(ops) > 0
	case form == "assign":
		var vs []string
		for _, o := range Operands(cmd.Args) {
			if k, _, ok := strings.Cut(o, "="); ok && k != "" {
				vs = append(vs, o)
			}
		}
		return vs, len(vs) > 0
	case strings.HasPrefix(form, "sub:"):
		return nil, subMatches(Operands(cmd.Args), strings.Split(form[len("sub:"):], "+"))
	case strings.HasPrefix(form, "arg:"):
		return prefixedArgs(cmd.Args, form[len("arg:"):])
	case strings.HasPrefix(form, "-"):
		return optionForm(cmd.Args, form)
	}
	return nil, false
}

// subMatches reports whether the operands begin with the words, case folded; "*" is any word.
func subMatches(ops, words []string) bool {
	if len(ops) < len(words) {
		return false
	}
	for i, w := range words {
		if w != "*" && !strings.EqualFold(ops[i], w) {
			return false
		}
	}
	return true
}

// prefixedArgs are the arguments starting with a prefix (case folded), as values: the rest up to
// a comma (socat's address options follow one), with escaped spaces undone.
func prefixedArgs(args []string, prefix string) ([]string, bool) {
	var vs []string
	for _, a := range args {
		a = strings.Trim(a, `'"`)
		if len(a) >= len(prefix) && strings.EqualFold(a[:len(prefix)], prefix) {
			v, _, _ := strings.Cut(strings.Trim(a[len(prefix):], `'"`), ",")
			vs = append(vs, strings.ReplaceAll(v, `\ `, " "))
		}
	}
	return vs, len(vs) > 0
}

// optionForm reads an option form: -x or --long (present, with its values), --opt=prefix (a
// value that starts with prefix, the rest as the value), -o:Key (a key=value or "key value"
// pair given to -o).
func optionForm(args []string, form string) ([]string, bool) {
	if opt, key, ok := strings.Cut(form, ":"); ok {
		var vs []string
		for _, pair := range OptionValues(args, opt) {
			k, v, ok := strings.Cut(pair, "=")
			if !ok {
				k, v, _ = strings.Cut(pair, " ")
			}
			if strings.EqualFold(k, key) {
				vs = append(vs, v)
			}
		}
		return vs, len(vs) > 0
	}
	if opt, prefix, ok := strings.Cut(form, "="); ok {
		var vs []string
		for _, v := range OptionValues(args, opt) {
			if rest, ok := strings.CutPrefix(v, prefix); ok {
				vs = append(vs, rest)
			}
		}
		return vs, len(vs) > 0
	}
	present := slices.ContainsFunc(args, func(a string) bool { return a == form || strings.HasPrefix(a, form+"=") })
	vs := OptionValues(args, form)
	return vs, present || len(vs) > 0
}

// stdinText is what a command's standard input holds, where the command shows it: a literal
// here-document or here-string, or what echo or printf print into it.
func stdinText(cmd *Command) []string {
	var text []string
	if in, ok := cmd.FDs["0"]; ok && in.Lit {
		text = append(text, in.Text)
	}
	if n := len(cmd.UpstreamCmds); n > 0 {
		if up := cmd.UpstreamCmds[n-1]; up.Name == "echo" || up.Name == "printf" {
			text = append(text, strings.Join(up.Args, " "))
		}
	}
	return text
}

// StdinPaths are the paths named on a command's standard input, where the command shows them.
func StdinPaths(cmd *Command) []string {
	var out []string
	for _, t := range stdinText(cmd) {
		for _, w := range strings.Fields(strings.ReplaceAll(t, `\n`, "\n")) {
			if LooksLikePath(w) {
				out = append(out, w)
			}
		}
	}
	return out
}
