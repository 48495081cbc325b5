package facts

import (
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// xargs and parallel run a command once per input, the input put in place of a replace string
// ({} or what -I names) or after the arguments. Judged on their inputs when the command line
// makes them (echo / | xargs rm -rf, parallel rm -rf {} ::: /), as the shell would run them.

// parallelValue are GNU parallel's options that take the next word as their value.
var parallelValue = nameset.Of("-j", "--jobs", "-S", "--sshlogin", "--results", "--res", "--joblog", "-a", "--arg-file",
	"--delay", "--timeout", "--retries", "-N", "-n", "--max-args", "--colsep", "-C", "-d", "--delimiter", "-E", "--tmpdir",
	"--workdir", "--wd", "--basefile", "--bf", "--return", "--transferfile", "--tf", "-I", "--replace", "--tagstring",
	"--load", "--memfree", "--halt", "--sshloginfile", "--slf", "--env", "--shebang-wrap", "--termseq", "-P", "--max-procs",
	"-L", "--max-lines", "-s", "--max-chars", "--rpl", "--plus", "--profile", "-J", "--header")

// parallelParts splits parallel's arguments (after its name) into the command template, the
// inputs after ::: and the replace string.
func parallelParts(args []string) (tmpl, inputs []string, repl string, hasInputs bool) {
	repl = "{}"
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != ":::" {
		a := args[i]
		name, value, inline := strings.Cut(a, "=")
		if name == "-I" || name == "--replace" {
			if inline {
				repl = value
			} else if i+1 < len(args) {
				repl = args[i+1]
			}
		}
		if parallelValue.Has(name) && !inline {
			i++ // -j 2, -S host; -j2 and -Shost carry theirs
		}
		i++
	}
	rest := args[i:]
	j := slices.Index(rest, ":::")
	if j < 0 {
		return rest, nil, repl, false
	}
	tmpl = rest[:j]
	for _, in := range rest[j+1:] {
		if in == ":::" || in == "::::" || in == ":::+" {
			continue // another input source: its values are inputs too
		}
		inputs = append(inputs, in)
	}
	return tmpl, inputs, repl, true
}

// fanOut puts inputs into a command template: in place of repl wherever it appears, or after
// the template when it appears nowhere. A template of one word with spaces is a shell command
// line; an empty one means each input is itself the command.
func fanOut(tmpl, inputs []string, repl string) []string {
	if len(tmpl) == 0 {
		var out []string
		for _, in := range inputs {
			out = append(out, strings.Fields(in)...)
		}
		return out
	}
	if len(inputs) == 0 {
		return tmpl // the inputs come at run time: the template is what is known
	}
	if len(tmpl) == 1 && strings.Contains(tmpl[0], " ") {
		tmpl = strings.Fields(tmpl[0])
	}
	used := false
	var out []string
	for _, w := range tmpl {
		switch {
		case w == repl:
			out = append(out, inputs...)
			used = true
		case repl != "" && strings.Contains(w, repl):
			out = append(out, strings.ReplaceAll(w, repl, strings.Join(inputs, " ")))
			used = true
		default:
			out = append(out, w)
		}
	}
	if !used {
		out = append(out, inputs...)
	}
	return out
}

// xargsReplace returns the replace string xargs's options set (-I R, -IR, -i, --replace[=R],
// BSD -J R), "" when none.
func xargsReplace(f []string) string {
	i := slices.Index(f, "xargs")
	if i < 0 {
		return ""
	}
	for j := i + 1; j < len(f) && strings.HasPrefix(f[j], "-"); j++ {
		a := f[j]
		switch {
		case (a == "-I" || a == "-J") && j+1 < len(f):
			return f[j+1]
		case strings.HasPrefix(a, "-I") && len(a) > 2:
			return a[2:]
		case a == "-i" || a == "--replace":
			return "{}"
		case strings.HasPrefix(a, "--replace="):
			return strings.TrimPrefix(a, "--replace=")
		case wrapperOptsWithValue.Get()["xargs"][a]:
			j++
		}
	}
	return ""
}
