package facts

// What the analysis must know of programs to read a command at all: shells, interpreters and
// the flags that hand them code, wrappers and their options, downloaders, and the options that
// take values.

import (
	"net/url"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// downloaders are programs whose output is fetched or decoded text (see IsDownloader).
var downloaders = nameset.Of("curl", "wget", "fetch", "base64", "xxd", "openssl",
	"nc", "ncat", "netcat", "gunzip", "zcat", "uudecode", "rev", "xclip", "pbpaste",
	"http", "https", "xh", "aria2c", "ssh", "socat", "tar", "unzip", "bsdtar",
	"bunzip2", "xz", "unxz", "zstd", "lwp-request", "GET", "telnet", "git")

// IsDownloader reports a program whose output is what it got from the network or decoded: the
// table above, and every program whose capabilities say it fetches.
func IsDownloader(prog string) bool { return downloaders.Has(prog) || hasCapability(prog, CapFetch) }

// NoExec reports a shell told to read without running (-n, also within -nc, -ne).
func NoExec(cmd *Command) bool {
	if !shells.Has(cmd.Name) {
		return false
	}
	no := false
	for _, a := range cmd.Args {
		switch {
		case a == "+n" || strings.HasPrefix(a, "+") && strings.Contains(a, "n"):
			no = false // set +n: execution back on
		case a == "--" || !strings.HasPrefix(a, "-"):
			return no
		case !strings.HasPrefix(a, "--") && strings.Contains(a, "n"):
			no = true
		}
	}
	return no
}

// ProducesCode reports whether an upstream command really emits fetched or decoded text: curl
// --version, base64 encoding, wget saving to a file, nc -z print nothing a shell should fear.
func ProducesCode(c *Command) bool {
	args := " " + strings.Join(MaskValues(c.Name, c.Args, "--url"), " ") + " " // curl -H --help URL still fetches
	has := func(flags ...string) bool {
		for _, f := range flags {
			if strings.Contains(args, " "+f+" ") || strings.Contains(args, " "+f+"=") {
				return true
			}
		}
		return false
	}
	switch c.Name {
	case "curl", "http", "https", "xh", "ssh":
		if has("--version", "-V", "--help", "-h", "--offline") || c.Name != "curl" && c.Name != "ssh" && has("--download", "-d") {
			return false
		}
		if c.Name == "curl" && Destination(c) == "" {
			return !strings.Contains(args, "file:") && len(Operands(c.Args)) > 0
		}
		return !strings.Contains(args, " file://")
	case "wget":
		return slices.Contains(OptionValues(MaskValues("wget", c.Args, "-O", "--output-document"), "-O", "--output-document"), "-")
	case "base64", "openssl":
		return has("-d", "--decode", "-D", "-di")
	case "xxd":
		return has("-r", "-rp", "-pr", "-r -p")
	case "nc", "ncat", "netcat":
		return !has("-z")
	}
	return true
}

// SetOf is a set of names, for the tables.
func SetOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// maskedValue stands in for an option's value that must not be read as anything else.
const maskedValue = "\x00"

// MaskValues returns the arguments with the values of the program's value-taking options
// replaced by maskedValue, except those of the options named in keep. Programs without a table
// get their arguments back as they are.
func MaskValues(name string, args []string, keep ...string) []string {
	vo, ok := valueOptions.Get()[name]
	if !ok {
		return args
	}
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		switch {
		case a == "--":
			return out
		case strings.HasPrefix(a, "--"):
			if vo.long[a] && i+1 < len(out) {
				if !slices.Contains(keep, a) {
					out[i+1] = maskedValue
				}
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for k := 1; k < len(a); k++ {
				if !strings.ContainsRune(vo.short, rune(a[k])) {
					continue
				}
				if k == len(a)-1 && i+1 < len(out) { // -sSo FILE: the value is the next word
					if !slices.Contains(keep, "-"+string(a[k])) {
						out[i+1] = maskedValue
					}
					i++
				}
				break // or the rest of this word
			}
		}
	}
	return out
}

// FlagValue is the value given as the argument after flag, if any.
func FlagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		// combined short flags such as -lc or -ec
		if len(flag) == 2 && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, flag[1:]) && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// Operands are the arguments that are not options; everything after "--" is one.
func Operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" { // what follows is operands, whatever it looks like
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}

// OptionValues returns each value of the options named, given as "-o v", "-ov", "--opt v" or
// "--opt=v".
//
// Long options may be abbreviated as GNU tools allow (--post-f for --post-file, six characters at
// least), and a short one may end a cluster of flags (-sF name=@x, -voProxyCommand=…).
func OptionValues(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, n := range names {
			long := strings.HasPrefix(n, "--")
			name, value, inline := strings.Cut(a, "=")
			switch {
			case a == n && i+1 < len(args):
				out = append(out, args[i+1])
			case long && inline && (name == n || len(name) >= 6 && strings.HasPrefix(n, name)):
				out = append(out, value)
			case long && !inline && len(a) >= 6 && a != n && strings.HasPrefix(n, a) && i+1 < len(args):
				out = append(out, args[i+1])
			case !long && len(n) == 2 && len(a) > 2 && a[0] == '-' && a[1] != '-':
				// -Fvalue, or -sF value / -sFvalue: the option's letter inside a cluster
				if k := strings.IndexByte(a[1:], n[1]); k >= 0 && IsFlagCluster(a[1:1+k]) {
					if rest := a[2+k:]; rest != "" {
						out = append(out, rest)
					} else if i+1 < len(args) {
						out = append(out, args[i+1])
					}
				}
			}
		}
	}
	return out
}

// IsFlagCluster reports letters that can only be flags without values before an option in a
// cluster: plain letters.
func IsFlagCluster(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// execStrings are the commands a command hands to a shell through an option or a script:
// tar --to-command, ssh -o ProxyCommand, rsync -e, trap, osascript's do shell script, awk's
// system(), find -exec is elsewhere. The analysis reads each as shell.
func execStrings(cmd *Command) []string {
	var out []string
	for _, h := range CapabilityHits(cmd) {
		if h.Cap == CapShell || h.Cap == CapExec || h.Cap == CapNetShell {
			out = append(out, h.Values...)
		}
	}
	if line := containerCommand(cmd); line != "" {
		out = append(out, line)
	}
	out = append(out, StoredCommands(cmd)...)
	switch cmd.Name {
	case "script": // the BSD and macOS form: script [-q] FILE COMMAND…
		if _, ok := FlagValue(cmd.Args, "-c"); !ok {
			i := 0
			for i < len(cmd.Args) && strings.HasPrefix(cmd.Args[i], "-") && cmd.Args[i] != "--" {
				if cmd.Args[i] == "-t" || cmd.Args[i] == "-T" || cmd.Args[i] == "-E" {
					i++ // the option's value
				}
				i++
			}
			if i < len(cmd.Args) && cmd.Args[i] == "--" {
				i++
			}
			if i+1 < len(cmd.Args) {
				out = append(out, quoteAll(cmd.Args[i+1:])) // after the typescript file
			}
		}
	case "trap":
		if ops := Operands(cmd.Args); len(ops) > 0 {
			out = append(out, ops[0])
		}
	case "osascript":
		for _, s := range OptionValues(cmd.Args, "-e") {
			for _, m := range doShellScript.FindAllStringSubmatch(s, -1) {
				out = append(out, strings.ReplaceAll(m[1]+m[2], `\"`, `"`))
			}
		}
	case "awk", "gawk", "mawk", "nawk":
		for _, a := range cmd.Args {
			for _, m := range awkShell.FindAllStringSubmatch(a, -1) {
				out = append(out, m[1]+m[2])
			}
			// awk joins strings written side by side: system("r" "m -rf ~") runs rm -rf ~.
			for _, m := range awkJoined.FindAllStringSubmatch(a, -1) {
				var b strings.Builder
				for _, lit := range awkLiteral.FindAllStringSubmatch(m[1], -1) {
					b.WriteString(strings.ReplaceAll(lit[1], `\"`, `"`))
				}
				out = append(out, b.String())
			}
		}
	case "vim", "vi", "nvim", "ex", "view", "vimdiff":
		// vim -c ':!cmd' and +'!cmd' run cmd in a shell, as vim's :! does.
		for i, a := range cmd.Args {
			script := a
			if (a == "-c" || a == "--cmd") && i+1 < len(cmd.Args) {
				script = cmd.Args[i+1]
			} else if !strings.HasPrefix(a, "+") {
				continue
			}
			script = strings.TrimLeft(strings.TrimPrefix(script, "+"), ": ")
			if rest, ok := strings.CutPrefix(script, "!"); ok && strings.TrimSpace(rest) != "" {
				out = append(out, rest)
			} else if rest, ok := strings.CutPrefix(script, "sh"); ok && (rest == "" || rest == "ell") {
				out = append(out, "sh")
			}
		}
	case "watch":
		i := 0
		for i < len(cmd.Args) && strings.HasPrefix(cmd.Args[i], "-") {
			if a := cmd.Args[i]; a == "-n" || a == "--interval" || a == "-q" || a == "--equexit" {
				i++
			}
			i++
		}
		if i < len(cmd.Args) {
			out = append(out, strings.Join(cmd.Args[i:], " "))
		}
	case "tmux":
		ops := Operands(cmd.Args)
		if len(ops) >= 2 && (ops[0] == "new-session" || ops[0] == "new" || ops[0] == "new-window" || ops[0] == "split-window" || ops[0] == "respawn-pane") {
			out = append(out, ops[len(ops)-1])
		}
	case "screen":
		for i, a := range cmd.Args {
			if (a == "-dm" || a == "-dmS" || a == "-d" || a == "-m") && i+1 < len(cmd.Args) {
				rest := cmd.Args[i+1:]
				if a == "-dmS" && len(rest) > 0 {
					rest = rest[1:]
				}
				out = append(out, strings.Join(rest, " "))
				break
			}
		}
	}
	return out
}

var doShellScript = lazyregexp.New(`do shell script\s+(?:"((?:[^"\\]|\\.)*)"|'([^']*)')`)

// awkJoined is a system() call whose argument is string literals written side by side; awkLiteral
// each of them.
var (
	awkJoined  = lazyregexp.New(`system\s*\(\s*((?:"(?:[^"\\]|\\.)*"\s*){2,16})\)`)
	awkLiteral = lazyregexp.New(`"((?:[^"\\]|\\.)*)"`)
)

var awkShell = lazyregexp.New(`system\s*\(\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')|\|\s*"(sh|bash|zsh)"`)

// valueOptions are the options of network clients that take the next word as their value, so
// that a value is never read as an option (curl -o -d@.env saves to a file named -d@.env; curl -H
// --help sends a header named --help and fetches all the same). Short ones are letters.
var valueOptions = lazy.Value[map[string]optionTable]{Make: func() map[string]optionTable {
	return map[string]optionTable{
		"curl": {short: "AbcCdDeEFHKmoPQrtTuUwxXyYz", long: SetOf("--cacert", "--capath", "--cert", "--cert-type", "--ciphers",
			"--config", "--connect-timeout", "--connect-to", "--cookie", "--cookie-jar", "--continue-at", "--data", "--data-ascii",
			"--data-binary", "--data-raw", "--data-urlencode", "--dump-header", "--form", "--form-string", "--header", "--json",
			"--key", "--key-type", "--limit-rate", "--max-time", "--max-filesize", "--output", "--output-dir", "--proxy",
			"--proxy-header", "--proxy-user", "--quote", "--range", "--referer", "--request", "--resolve", "--retry",
			"--retry-delay", "--retry-max-time", "--upload-file", "--url", "--user", "--user-agent", "--write-out", "--interface",
			"--dns-servers", "--unix-socket", "--abstract-unix-socket", "--aws-sigv4", "--oauth2-bearer", "--noproxy",
			"--preproxy", "--variable", "--pinnedpubkey", "--proto", "--proto-redir", "--trace", "--trace-ascii", "--stderr",
			"--local-port", "--netrc-file", "--hostpubsha256", "--crlfile", "--egd-file", "--random-file", "--mail-from",
			"--mail-rcpt", "--mail-auth", "--socks5", "--socks5-hostname", "--socks4", "--socks4a", "--telnet-option")},
		"wget": {short: "OoaPtTwUeiBQlARDXIY", long: SetOf("--output-document", "--output-file", "--append-output",
			"--directory-prefix", "--tries", "--timeout", "--wait", "--user-agent", "--execute", "--input-file", "--base",
			"--quota", "--level", "--accept", "--reject", "--domains", "--header", "--post-data", "--post-file", "--body-data",
			"--body-file", "--method", "--user", "--password", "--load-cookies", "--save-cookies")},
		"http":  httpieValues,
		"https": httpieValues, // HTTPie's two names
		"ssh":   {short: "pilLoFJRDbceEmOSWwB"},
	}
}}

// optionTable is a program's value-taking options: short ones as letters, long ones by name.
type optionTable struct {
	short string
	long  map[string]bool
}

var httpieValues = optionTable{short: "aAo", long: SetOf("--auth", "--auth-type", "--output", "--session", "--session-read-only", "--verify", "--cert", "--cert-key", "--proxy", "--print", "--pretty", "--style", "--timeout")}

// Destination is where a network client sends: its URL, or host for raw senders.
func Destination(cmd *Command) string {
	args := MaskValues(cmd.Name, cmd.Args, "--url")
	for _, a := range args {
		if u, err := url.Parse(a); err == nil && (u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "ftp") && u.Host != "" {
			return u.Scheme + "://" + u.Host + u.Path
		}
	}
	if rawSenders.Has(cmd.Name) {
		if ops := Operands(cmd.Args); len(ops) > 0 {
			return ops[0]
		}
	}
	if _, ok := fetchOutput.Get()[cmd.Name]; ok { // curl evil.example: a bare host is a URL to curl
		for _, a := range args {
			if bareHost.MatchString(a) {
				return "http://" + a
			}
		}
	}
	return ""
}

var bareHost = lazyregexp.New(`^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(:[0-9]+)?(/\S*)?$`)

// rawSenders send their standard input to the host named in their arguments.
var rawSenders = nameset.Of("nc", "ncat", "netcat", "socat", "telnet", "openssl",
	"mail", "mailx", "sendmail", "mutt", "msmtp")

// fetchOutput are the options naming the file a download is saved to; remoteName ones save it
// under the URL's own name.
var fetchOutput = lazy.Value[map[string]SaveOptions]{Make: func() map[string]SaveOptions {
	return map[string]SaveOptions{
		"curl": {Output: []string{"-o", "--output"}, RemoteName: []string{"-O", "--remote-name", "--remote-name-all"}, Dir: []string{"--output-dir"}},
		"wget": {Output: []string{"-O", "--output-document"}, Dir: []string{"-P", "--directory-prefix"}},
	}
}}

var shells = nameset.Of("sh", "bash", "zsh", "dash", "ksh", "ash", "fish",
	"mksh", "yash", "posh", "rbash", "tcsh", "csh", "oksh", "loksh")

// awks take their program as the first operand.
var awks = nameset.Of("awk", "gawk", "mawk", "nawk", "busybox-awk")

var interpreters = lazy.Value[map[string]string]{Make: func() map[string]string {
	return map[string]string{ // name -> flag that takes code
		"python": "-c", "python2": "-c", "python3": "-c", "node": "-e", "nodejs": "-e", "deno": "eval",
		"ruby": "-e", "perl": "-e", "php": "-r", "lua": "-e", "osascript": "-e",
		"pwsh": "-Command", "powershell": "-Command", "julia": "-e", "jjs": "-e", "jrunscript": "-e", "groovy": "-e",
		"Rscript": "-e", "tclsh": "-c", "wish": "-c", "luajit": "-e", "bun": "-e", "elixir": "-e", "erl": "-eval",
	}
}}

// builtins are commands bash runs itself, whatever hash or PATH say (unless `enable -n`).
var builtins = nameset.Of("echo", "printf", "cd", "pwd", "test", "[", "true",
	"false", "read", "type", "kill", "export", "set", "unset", "eval",
	"exec", "source", ".", ":", "command", "builtin", "hash", "alias")

// envCommandVars are variables whose value a program runs as a command.
var envCommandVars = nameset.Of("GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_PAGER",
	"GIT_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "PAGER", "EDITOR", "VISUAL",
	"RSYNC_RSH", "LESSOPEN", "LESSCLOSE", "MANPAGER", "BROWSER")

// wrapperArgs reports whether name is a wrapper and how many of args belong to it.
// wrapperOptsWithValue are the options of each wrapper that take a value.
var wrapperOptsWithValue = lazy.Value[map[string]map[string]bool]{Make: func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"sudo":    {"-u": true, "-g": true, "-p": true, "-C": true, "-h": true, "-U": true, "-r": true, "-t": true, "-T": true, "-D": true},
		"doas":    {"-u": true, "-C": true},
		"env":     {"-u": true, "-C": true, "-P": true, "--unset": true, "--chdir": true},
		"nice":    {"-n": true},
		"ionice":  {"-c": true, "-n": true},
		"timeout": {"-s": true, "-k": true, "--signal": true, "--kill-after": true},
		"exec":    {"-a": true},
		"xargs": {"-n": true, "-I": true, "-J": true, "-R": true, "-P": true, "-L": true, "-d": true, "-E": true, "-s": true, "-a": true,
			"--delimiter": true, "--max-args": true, "--max-procs": true, "--max-lines": true, "--eof": true, "--arg-file": true, "--max-chars": true},
		"stdbuf":      {"-i": true, "-o": true, "-e": true},
		"flock":       {"-w": true, "--timeout": true, "-E": true, "--conflict-exit-code": true},
		"runuser":     {"-u": true, "--user": true, "-g": true, "--group": true, "-G": true, "--supp-group": true},
		"nsenter":     {"-t": true, "--target": true},
		"systemd-run": {"-u": true, "--unit": true, "-p": true, "--property": true},
		"strace":      {"-o": true, "-e": true, "-p": true, "-s": true, "-E": true, "-u": true, "-a": true, "-O": true, "-S": true, "-P": true},
		"ltrace":      {"-o": true, "-e": true, "-p": true, "-s": true, "-u": true, "-a": true, "-F": true, "-n": true, "-A": true, "-D": true, "-l": true},
		"gdb":         {"-ex": true, "-x": true},
	}
}}
