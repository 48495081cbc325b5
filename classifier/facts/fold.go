package facts

import (
	"encoding/base64"
	"encoding/hex"
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Constant folding: values a command makes for itself are computed, so that a rule sees what the
// shell would run. `$(echo /)`, `$(printf '\x72\x6d')` and `$(echo cm0= | base64 -d)` become
// "/", "rm" and the decoded text; everything else a substitution does stays unknown ("$(...)").
// Every fold is bounded by the analysis limits: its output counts as an expansion.

// maxFoldDepth bounds substitutions folded inside substitutions.
const maxFoldDepth = 4

// foldSubst computes the output of a command substitution made only of literal producers and
// decoders: echo or printf of known words, piped through base64 -d, xxd -r -p or rev.
func (w *walker) foldSubst(cs *syntax.CmdSubst) (string, bool) {
	if len(cs.Stmts) != 1 || w.folding >= maxFoldDepth {
		return "", false
	}
	if name, ok := w.lookedUp(cs.Stmts[0].Cmd); ok {
		return name, true
	}
	var calls []*syntax.CallExpr
	if !pipelineCalls(cs.Stmts[0], &calls) || len(calls) == 0 {
		return "", false
	}
	return w.foldCalls(calls)
}

// lookedUp folds a program looked up by name, `which python || which python3`, `command -v
// node`, to the name it prints the path of (the first that is found): the program a variable
// set from it runs is that one, and is judged as such.
func (w *walker) lookedUp(cmd syntax.Command) (string, bool) {
	switch c := cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op != syntax.OrStmt {
			return "", false
		}
		first, ok := w.lookedUp(c.X.Cmd)
		if _, ok2 := w.lookedUp(c.Y.Cmd); !ok || !ok2 {
			return "", false
		}
		return first, true
	case *syntax.CallExpr:
		f := w.fields(c.Args)
		switch {
		case len(f) == 2 && f[0] == "which", len(f) == 3 && (f[0] == "command" && f[1] == "-v" || f[0] == "type" && f[1] == "-P"):
			name := f[len(f)-1]
			if strings.ContainsAny(name, "$/ ") || strings.HasPrefix(name, "-") {
				return "", false
			}
			return name, true
		}
	}
	return "", false
}

// foldCalls computes what a pipeline of literal producers and decoders prints.
func (w *walker) foldCalls(calls []*syntax.CallExpr) (string, bool) {
	if len(calls) == 0 || w.folding >= maxFoldDepth {
		return "", false
	}
	w.folding++
	defer func() { w.folding-- }()
	var out string
	for i, c := range calls {
		f := w.fields(c.Args)
		if len(f) == 0 || strings.Contains(strings.Join(f, " "), "$(...)") {
			return "", false
		}
		name, args := baseName(f[0]), f[1:]
		var ok bool
		switch {
		case i == 0 && name == "cat" && len(args) == 0 && w.lastStmt[c] != nil:
			out, ok = heredoc(w.lastStmt[c]) // cat <<'EOF' | bash
		case i == 0:
			out, ok = produce(name, args)
		default:
			out, ok = transform(name, args, out)
		}
		if !ok {
			return "", false
		}
	}
	return strings.TrimRight(out, "\n"), true // as a substitution drops trailing newlines
}

// pipelineCalls lists the calls of a plain pipeline (a | b | c), in order.
func pipelineCalls(st *syntax.Stmt, calls *[]*syntax.CallExpr) bool {
	if len(st.Redirs) > 0 || st.Background || st.Negated {
		return false
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 || len(c.Args) == 0 {
			return false
		}
		*calls = append(*calls, c)
		return true
	case *syntax.BinaryCmd:
		return c.Op == syntax.Pipe && pipelineCalls(c.X, calls) && pipelineCalls(c.Y, calls)
	}
	return false
}

// produce is what echo or printf print for literal arguments.
func produce(name string, args []string) (string, bool) {
	switch name {
	case "echo":
		escapes, newline := false, true
		for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
			escapes = escapes || strings.Contains(args[0], "e")
			newline = newline && !strings.Contains(args[0], "n")
			args = args[1:]
		}
		s := strings.Join(args, " ")
		if escapes {
			s = unescape(s)
		}
		if newline {
			s += "\n"
		}
		return s, true
	case "printf":
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return "", false
		}
		return printfOutput(args[0], args[1:])
	}
	return "", false
}

// transform applies a decoder to its input.
func transform(name string, args []string, in string) (string, bool) {
	flags := strings.Join(args, " ")
	switch {
	case name == "base64" && (flags == "-d" || flags == "--decode" || flags == "-D" || flags == "-di" || flags == "-d -i"):
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(in), ""))
		if err != nil {
			return "", false
		}
		return string(b), true
	case name == "xxd" && (flags == "-r -p" || flags == "-p -r" || flags == "-rp" || flags == "-pr"):
		b, err := hex.DecodeString(strings.Join(strings.Fields(in), ""))
		if err != nil {
			return "", false
		}
		return string(b), true
	case name == "rev" && flags == "":
		lines := strings.Split(strings.TrimSuffix(in, "\n"), "\n")
		for i, l := range lines {
			r := []rune(l)
			slices.Reverse(r)
			lines[i] = string(r)
		}
		return strings.Join(lines, "\n") + "\n", true
	case name == "tr" && len(args) == 2:
		return translate(in, args[0], args[1])
	}
	return "", false
}

// translate is tr SET1 SET2 for sets of characters and ranges (rot13's 'a-zA-Z' 'n-za-mN-ZA-M');
// classes, escapes and options are not folded.
func translate(in, from, to string) (string, bool) {
	f, okf := expandSet(from)
	t, okt := expandSet(to)
	if !okf || !okt || len(t) == 0 {
		return "", false
	}
	m := map[rune]rune{}
	for i, r := range f {
		m[r] = t[min(i, len(t)-1)] // the last of SET2 repeats, as tr pads it
	}
	var b strings.Builder
	for _, r := range in {
		if x, ok := m[r]; ok {
			r = x
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// expandSet spells out a tr set of characters and a-z ranges.
func expandSet(s string) ([]rune, bool) {
	rs := []rune(s)
	var out []rune
	for i := 0; i < len(rs); i++ {
		switch {
		case rs[i] == '[' || rs[i] == '\\':
			return nil, false
		case i+2 < len(rs) && rs[i+1] == '-' && rs[i] <= rs[i+2]:
			for r := rs[i]; r <= rs[i+2]; r++ {
				out = append(out, r)
			}
			i += 2
		default:
			out = append(out, rs[i])
		}
	}
	return out, len(out) > 0 && len(out) <= 512
}

// printfOutput formats like printf(1) for %s, %b, %c, %d and escapes; the format is reused while
// arguments remain, as the shell's printf does.
func printfOutput(format string, args []string) (string, bool) {
	var b strings.Builder
	for pass := 0; pass == 0 || len(args) > 0; pass++ {
		used := false
		for i := 0; i < len(format); i++ {
			c := format[i]
			if c == '\\' {
				s, n := escapeAt(format, i)
				b.WriteString(s)
				i += n - 1
				continue
			}
			if c != '%' || i+1 == len(format) {
				b.WriteByte(c)
				continue
			}
			i++
			verb := format[i]
			if verb == '%' {
				b.WriteByte('%')
				continue
			}
			arg := ""
			if len(args) > 0 {
				arg, args, used = args[0], args[1:], true
			}
			switch verb {
			case 's', 'd', 'i', 'u':
				b.WriteString(arg)
			case 'b':
				b.WriteString(unescape(arg))
			case 'c':
				if arg != "" {
					b.WriteByte(arg[0])
				}
			default:
				return "", false // a width, a precision, a float: not folded
			}
		}
		if !used || pass > 64 {
			break
		}
	}
	return b.String(), true
}

// unescape resolves backslash escapes as echo -e and printf %b do.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		e, n := escapeAt(s, i)
		b.WriteString(e)
		i += n - 1
	}
	return b.String()
}

// escapeAt decodes the escape at s[i] (a backslash) and says how many bytes it took.
func escapeAt(s string, i int) (string, int) {
	if i+1 >= len(s) {
		return `\`, 1
	}
	switch c := s[i+1]; c {
	case 'n':
		return "\n", 2
	case 't':
		return "\t", 2
	case 'r':
		return "\r", 2
	case '\\':
		return `\`, 2
	case 'a':
		return "\a", 2
	case 'e', 'E':
		return "\x1b", 2
	case 'x':
		j := i + 2
		for j < len(s) && j < i+4 && isHex(s[j]) {
			j++
		}
		if j == i+2 {
			return `\x`, 2
		}
		v, _ := strconv.ParseUint(s[i+2:j], 16, 8)
		return string([]byte{byte(v)}), j - i
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		j := i + 2
		for j < len(s) && j < i+2+n && isHex(s[j]) {
			j++
		}
		if j == i+2 {
			return s[i : i+2], 2
		}
		v, _ := strconv.ParseUint(s[i+2:j], 16, 32)
		return string(rune(v)), j - i
	case '0', '1', '2', '3', '4', '5', '6', '7':
		j := i + 1
		if c == '0' {
			j++ // \0NNN
		}
		k := j
		for k < len(s) && k < j+3 && s[k] >= '0' && s[k] <= '7' {
			k++
		}
		if k == j {
			return "\x00", j - i
		}
		v, _ := strconv.ParseUint(s[j:k], 8, 8)
		return string([]byte{byte(v)}), k - i
	default:
		return s[i : i+2], 2
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// systemDirs are where a glob in command position (/bin/r?, /???/?m) is resolved: the folders
// holding the programs of macOS and of the VM's Linux.
var systemDirs = []string{"/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/opt/homebrew/bin"}

// globbedPrograms are the programs such a glob is resolved to: the standard ones, and every one a
// default rule names. A glob that could mean several is the most dangerous of them.
var globbedPrograms = []string{
	"rm", "dd", "mkfs", "shred", "chmod", "chown", "curl", "wget", "nc", "ncat", "socat", "sh", "bash", "zsh",
	"dash", "ksh", "python", "python3", "perl", "ruby", "node", "osascript", "security", "sudo", "su", "kill",
	"pkill", "killall", "launchctl", "crontab", "scp", "rsync", "ssh", "tar", "mv", "cp", "ln", "find", "xargs",
	"base64", "xxd", "git", "diskutil", "tmutil", "csrutil", "spctl", "xattr", "defaults", "ls", "cat", "echo",
	"env", "id", "ps", "tee", "touch", "mkdir", "rmdir", "head", "tail", "sed", "awk", "grep", "sort", "wc",
}

// dangerRank orders programs a glob may stand for: the first match in this list wins.
var dangerRank = []string{"rm", "dd", "mkfs", "shred", "curl", "wget", "nc", "ncat", "socat", "sh", "bash", "zsh",
	"dash", "ksh", "python3", "python", "perl", "ruby", "node", "osascript", "security", "sudo", "su", "kill",
	"pkill", "killall", "chmod", "chown", "mv", "scp", "rsync", "ssh", "launchctl", "crontab"}

// resolveGlob returns the program a glob in command position runs, "" when it is no glob or
// matches nothing known.
func resolveGlob(word string) string {
	if !strings.ContainsAny(word, "*?[") {
		return ""
	}
	var matched []string
	for _, p := range globbedPrograms {
		for _, d := range systemDirs {
			full := d + "/" + p
			var ok bool
			if strings.Contains(word, "/") {
				ok, _ = path.Match(word, full)
			} else {
				ok, _ = path.Match(word, p)
			}
			if ok && !slices.Contains(matched, p) {
				matched = append(matched, p)
			}
		}
	}
	for _, p := range dangerRank {
		if slices.Contains(matched, p) {
			return p
		}
	}
	if len(matched) > 0 {
		return matched[0]
	}
	return ""
}
