package effects

import (
	"path"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// The effect model: what a command does, typed, whatever its spelling. Each simple command the
// analysis reaches (wrappers looked through, values folded) is mapped through the tool tables to
// effects with their targets; rules of target "effect" judge them, matched against one line per
// effect such as
//
//	send data=file:~/.ssh/id_rsa secret to=https://paste.example by=curl
//	credential what="GitHub token" by=gh
//	fetch-exec from=https://get.example/i.sh file=/tmp/i.sh by=sh
//	config key=core.fsmonitor exec by=git
//
// `coworkbridge check` lists the effects it saw, so an admin writing a rule sees the lines.

// EffectKind names what a command does.
type EffectKind string

// The effect kinds.
const (
	EffectDelete       EffectKind = "delete"        // removes files: target, recursive, critical
	EffectSend         EffectKind = "send"          // data leaves the machine: data=, to=
	EffectFetchExec    EffectKind = "fetch-exec"    // runs what it downloaded
	EffectExec         EffectKind = "exec"          // runs code handed to it (a command in an option)
	EffectCredential   EffectKind = "credential"    // prints a credential for the agent to read
	EffectSecurityOff  EffectKind = "security-off"  // switches a protection off
	EffectPersist      EffectKind = "persist"       // makes something run again later
	EffectConfig       EffectKind = "config"        // changes a tool's configuration; exec when it runs a command
	EffectInstall      EffectKind = "install"       // installs a package from a source it names
	EffectPrivilege    EffectKind = "privilege"     // asks for administrator rights
	EffectRemoteShell  EffectKind = "remote-shell"  // hands a shell to the network
	EffectPermissions  EffectKind = "permissions"   // changes modes or owners: target, recursive
	EffectImpact       EffectKind = "impact"        // stops the machine, or takes a user's access away
	EffectSystemConfig EffectKind = "system-config" // changes the machine's configuration for every user
	EffectServiceStop  EffectKind = "service-stop"  // stops or disables a service: service=, defence
	EffectLoadLibrary  EffectKind = "load-library"  // loads a library by path into a program: path=, planted
	EffectCollect      EffectKind = "collect"       // records the screen, keys, clipboard or traffic
	EffectServe        EffectKind = "serve"         // serves files to the network
	EffectMount        EffectKind = "mount"         // attaches a disk image or volume
	EffectDatabase     EffectKind = "database"      // SQL a database runs: destroy, leave-read-only, server-exec, server-file, credentials, privilege
	EffectPublish      EffectKind = "publish"       // makes a repository or its content public: existing, or new
	EffectMessage      EffectKind = "message"       // a message or mail rule with a recipient the user does not see: hidden, forward
	EffectAgent        EffectKind = "agent"         // starts an AI agent that runs tools of its own: program=, inherits or unguarded why=
)

// Effect is one thing a command does.
type Effect struct {
	Kind EffectKind
	// Attrs are the effect's details in order, rendered as key=value (or a bare key for a flag).
	Attrs [][2]string
	By    string // the program
}

// String is the line effect rules match.
func (e Effect) String() string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	for _, kv := range e.Attrs {
		b.WriteByte(' ')
		b.WriteString(kv[0])
		if kv[1] != "" {
			b.WriteByte('=')
			if strings.ContainsAny(kv[1], " \t") {
				b.WriteString(`"` + kv[1] + `"`)
			} else {
				b.WriteString(kv[1])
			}
		}
	}
	if e.By != "" {
		b.WriteString(" by=" + e.By)
	}
	return b.String()
}

// New is an effect of a kind, caused by a program (by), with attributes given as name, value
// pairs; a flag is a name with an empty value.
func New(kind EffectKind, by string, attrs ...string) Effect {
	e := Effect{Kind: kind, By: by}
	for i := 0; i+1 < len(attrs); i += 2 {
		e.Attrs = append(e.Attrs, [2]string{attrs[i], attrs[i+1]})
	}
	return e
}

// commandEffects maps one command to its effects. fl tells what holds a secret.
func commandEffects(cmd *facts.Command, cwd string, fl *Flow) []Effect {
	var out []Effect
	for _, tables := range []struct {
		rows []subcommand
		kind EffectKind
	}{{credentialCommands, EffectCredential}, {securityOff, EffectSecurityOff}, {persistence, EffectPersist}, {backupDeletes, EffectDelete}} {
		for _, s := range tables.rows {
			if tables.kind == EffectCredential && credentialConsumers.Has(cmd.PipesTo) {
				break
			}
			if s.matches(cmd) {
				e := New(tables.kind, cmd.Name, "what", s.what)
				if tables.kind == EffectDelete {
					e.Attrs = append(e.Attrs, [2]string{"backups", ""})
				}
				out = append(out, e)
				break
			}
		}
	}
	out = append(out, sendEffects(cmd, cwd, fl)...)
	if searchers.Has(cmd.Name) { // grep -r AKIA ~: the matches are the keys
		ops := facts.Operands(cmd.Args)
		if len(ops) >= 1 && fl.searchesForCredentials(cmd, ops) {
			for _, where := range append(ops[1:], facts.OptionValues(cmd.Args, "-r", "-R")...) {
				if root := facts.CanonPath(where, cwd); keyRoot(root) && keyMaterial.MatchString(strings.Join(cmd.Args, " ")) {
					out = append(out, New(EffectCredential, cmd.Name, "what", "a search for key material in "+root))
					break
				}
			}
		}
	}
	out = append(out, remoteShell(cmd)...)
	out = append(out, agentEffects(cmd)...)
	out = append(out, removals(cmd, cwd)...)
	out = append(out, movesAway(cmd, cwd)...)
	out = append(out, permissionEffects(cmd, cwd)...)
	switch cmd.Name {
	case "crontab":
		if !slices.Contains(cmd.Args, "-l") {
			out = append(out, New(EffectPersist, "crontab", "what", "a cron job"))
		}
	case "git":
		out = append(out, gitEffects(cmd)...)
		out = append(out, gitCleanReach(cmd, cwd)...)
	case "find":
		out = append(out, findDeletes(cmd, cwd)...)
	case "osascript":
		if strings.Contains(strings.Join(cmd.Args, " "), "administrator privileges") {
			out = append(out, New(EffectPrivilege, "osascript", "what", "administrator privileges"))
		}
		out = append(out, automationEffects(cmd)...)
	}
	out = append(out, serviceEffects(cmd)...)
	out = append(out, containerEffects(cmd, cwd)...)
	out = append(out, cloudEffects(cmd)...)
	out = append(out, packageConfigEffects(cmd)...)
	out = append(out, redirectEffects(cmd)...)
	out = append(out, runnerEffects(cmd)...)
	out = append(out, dnsEffects(cmd)...)
	out = append(out, indexSearchEffects(cmd)...)
	if subs, ok := installers.Get()[cmd.Name]; ok {
		out = append(out, installEffects(cmd, subs)...)
	}
	if cmd.Name == "python" || cmd.Name == "python3" {
		if i := slices.Index(cmd.Args, "-m"); i >= 0 && i+1 < len(cmd.Args) && cmd.Args[i+1] == "pip" {
			out = append(out, installEffects(&facts.Command{Name: "pip", Args: cmd.Args[i+2:]}, installers.Get()["pip"])...)
		}
	}
	return out
}

// remoteShell finds a shell handed to the network: nc -e /bin/sh, ncat --exec, socat EXEC:,
// a bash redirection to /dev/tcp.
func remoteShell(cmd *facts.Command) []Effect {
	switch cmd.Name {
	case "nc", "ncat", "netcat":
		runs := facts.OptionValues(cmd.Args, "-e", "-c", "--exec", "--sh-exec", "--lua-exec")
		for i, a := range cmd.Args { // -le /bin/sh, -lve …
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 2 && strings.ContainsAny(a[len(a)-1:], "ec") && i+1 < len(cmd.Args) {
				runs = append(runs, cmd.Args[i+1])
			}
		}
		ops := slices.DeleteFunc(facts.Operands(cmd.Args), func(o string) bool { return slices.Contains(runs, o) })
		listens := slices.ContainsFunc(cmd.Args, func(a string) bool {
			return a == "--listen" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "l")
		})
		if len(ops) == 0 && !listens {
			return nil // no host to connect to, no port to listen on: nc only complains
		}
		for _, r := range runs {
			if givesShell(r) {
				return []Effect{New(EffectRemoteShell, cmd.Name, "runs", r)}
			}
		}
	case "socat":
		for _, a := range cmd.Args {
			if u := strings.ToUpper(strings.Trim(a, `'"`)); u == "SHELL" || strings.HasPrefix(u, "SHELL:") {
				return []Effect{New(EffectRemoteShell, "socat", "runs", "a shell")}
			}
			if u := strings.ToUpper(a); strings.HasPrefix(u, "EXEC:") || strings.HasPrefix(u, "SYSTEM:") {
				if r := a[strings.Index(a, ":")+1:]; givesShell(r) {
					return []Effect{New(EffectRemoteShell, "socat", "runs", r)}
				}
			}
		}
	}
	return nil
}

// givesShell reports whether a command line runs a shell or an interpreter, which whoever
// connects then drives.
func givesShell(cmdline string) bool {
	cmdline = strings.Trim(cmdline, `"'`)
	if i := strings.IndexByte(cmdline, ','); i >= 0 && !strings.ContainsAny(cmdline[:i], " ") {
		cmdline = cmdline[:i] // socat EXEC:/bin/sh,pty,stderr: the options follow a comma
	}
	for _, c := range facts.Analyze(cmdline).Commands { // env -u X exec nice -n 5 sh is a shell too
		if facts.IsShell(c.Name) || facts.InterpreterFlag(c.Name) != "" || c.Name == "powershell" || c.Name == "pwsh" {
			return true
		}
	}
	return false
}

var vcsInternals = lazyregexp.New(`(^|/)\.git(/(objects|refs|packed-refs|HEAD|logs|worktrees|modules)(/.*)?)?/?$`)

// removals: the files rm, unlink, shred... remove. A repository's history (.git and what is in
// it) is marked vcs: it is what lets a person undo everything else.
func removals(cmd *facts.Command, cwd string) []Effect {
	if !removers.Has(cmd.Name) {
		return nil
	}
	recursive := false
	opts := true
	var out []Effect
	for _, a := range cmd.Args {
		switch {
		case opts && a == "--":
			opts = false
		case opts && (longOption(a, "--recursive") || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR")):
			recursive = true
		case opts && strings.HasPrefix(a, "-"):
		default:
			p := facts.CanonPath(a, cwd)
			e := New(EffectDelete, cmd.Name, "target", p)
			if recursive {
				e.Attrs = append(e.Attrs, [2]string{"recursive", ""})
			}
			if vcsInternals.MatchString(p) {
				e.Attrs = append(e.Attrs, [2]string{"vcs", ""})
			}
			out = append(out, e)
		}
	}
	return out
}

// longOption reports whether a is the long option full or an abbreviation of it that GNU tools
// accept (--rec for --recursive).
func longOption(a, full string) bool {
	return len(a) >= 5 && strings.HasPrefix(full, a)
}

// movesAway: mv takes its sources away from where they were; rsync --delete removes what the
// destination has beyond the source. Aimed at a critical folder, both are a deletion of it.
func movesAway(cmd *facts.Command, cwd string) []Effect {
	ops := facts.Operands(cmd.Args)
	var targets []string
	switch {
	case cmd.Name == "mv" && len(facts.OptionValues(cmd.Args, "-t", "--target-directory")) > 0:
		t := facts.OptionValues(cmd.Args, "-t", "--target-directory")[0]
		targets = slices.DeleteFunc(ops, func(o string) bool { return o == t })
	case cmd.Name == "mv" && len(ops) >= 2:
		targets = ops[:len(ops)-1]
	case cmd.Name == "rsync" && len(ops) >= 2 && slices.ContainsFunc(cmd.Args, func(a string) bool { return strings.HasPrefix(a, "--delete") }) &&
		!slices.ContainsFunc(cmd.Args, func(a string) bool {
			return a == "--dry-run" || a == "--list-only" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "n")
		}):
		targets = ops[len(ops)-1:]
	}
	var out []Effect
	for _, t := range targets {
		if p := facts.CanonPath(t, cwd); criticalPath.MatchString(p) && p != "." && p != ".." && !strings.HasPrefix(p, "./") {
			if cwdP := facts.CanonPath(cwd, ""); p == cwdP || strings.HasPrefix(p, cwdP+"/") {
				continue // the project's own folders
			}
			out = append(out, New(EffectDelete, cmd.Name, "target", p, "critical", ""))
		}
	}
	return out
}

func permissionEffects(cmd *facts.Command, cwd string) []Effect {
	if !permCommands.Has(cmd.Name) {
		return nil
	}
	recursive := slices.Contains(cmd.Wrappers, "find") // find / -exec chmod … {} + reaches every file
	for _, a := range cmd.Args {
		if a == "-R" || longOption(a, "--recursive") || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "R") {
			recursive = true
		}
	}
	var out []Effect
	ops := facts.Operands(cmd.Args)
	if len(ops) > 0 && !slices.ContainsFunc(cmd.Args, func(a string) bool { return strings.HasPrefix(a, "--reference") }) {
		ops = ops[1:] // the mode or owner
	}
	for _, t := range ops {
		p := facts.CanonPath(t, cwd)
		if !criticalPath.MatchString(p) || p == "." || p == ".." {
			continue
		}
		e := New(EffectPermissions, cmd.Name, "target", p, "critical", "")
		if recursive {
			e.Attrs = append(e.Attrs, [2]string{"recursive", ""})
		}
		out = append(out, e)
	}
	return out
}

// matches reports whether cmd is this subcommand: its program, its words in order among the
// operands (options skipped), and one of anyFlag among all arguments when set.
func (s subcommand) matches(cmd *facts.Command) bool {
	if cmd.Name != s.prog {
		return false
	}
	ops := facts.Operands(cmd.Args)
	if len(ops) < len(s.words) {
		return false
	}
	for i, w := range s.words {
		if !strings.EqualFold(ops[i], w) {
			return false
		}
	}
	if s.test != nil && !s.test(cmd) {
		return false
	}
	if len(s.anyFlag) == 0 {
		return true
	}
	for _, a := range cmd.Args {
		for _, f := range s.anyFlag {
			if strings.EqualFold(a, f) || strings.HasPrefix(a, f+"=") || inShortBundle(a, f) {
				return true
			}
		}
	}
	return false
}

// inShortBundle reports a one-letter option f (-w) given in a bundle of them (-wa).
func inShortBundle(a, f string) bool {
	return len(f) == 2 && f[0] == '-' && f[1] != '-' && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], f[1]) >= 0
}

// sendEffects finds what a network client sends and where.
func sendEffects(cmd *facts.Command, cwd string, fl *Flow) []Effect {
	if sendOptions.Get()[cmd.Name] == nil && !facts.IsRawSender(cmd.Name) && !otherSenders.Has(cmd.Name) {
		return nil // most commands send nothing: no URL parsing for them
	}
	dest := facts.Destination(cmd)
	var out []Effect
	add := func(data string, isFile bool) {
		attrs := []string{"data", data}
		e := New(EffectSend, cmd.Name, attrs...)
		switch {
		case isFile:
			raw := strings.TrimPrefix(data, "file:")
			p := facts.CanonPath(raw, cwd)
			e.Attrs[0][1] = "file:" + p
			if fl.secretIn(cmd, raw) {
				e.Attrs = append(e.Attrs, [2]string{"secret", ""})
			} else if fl.dumped(raw) {
				e.Attrs = append(e.Attrs, [2]string{"dump", ""})
			} else if wholeTree(raw, cwd) {
				e.Attrs = append(e.Attrs, [2]string{"tree", ""})
			}
		case data == "stdin" || strings.HasPrefix(data, "stdin:"):
			if fl.stdinSecret(cmd) {
				e.Attrs = append(e.Attrs, [2]string{"secret", ""})
			} else if fl.stdinDump(cmd) {
				e.Attrs = append(e.Attrs, [2]string{"dump", ""})
			} else if upstreamTree(cmd, cwd) {
				e.Attrs = append(e.Attrs, [2]string{"tree", ""})
			}
		case secretVar.MatchString(data):
			e.Attrs = append(e.Attrs, [2]string{"secret", ""})
		}
		if dest != "" {
			e.Attrs = append(e.Attrs, [2]string{"to", dest})
		}
		out = append(out, e)
	}
	masked := cmd.Args
	if opts := sendOptions.Get()[cmd.Name]; opts != nil {
		keep := make([]string, 0, len(opts))
		for opt := range opts {
			keep = append(keep, opt)
		}
		masked = facts.MaskValues(cmd.Name, cmd.Args, keep...) // curl -o -d@.env saves to a file, sends nothing
	}
	for opt, form := range sendOptions.Get()[cmd.Name] {
		for _, v := range facts.OptionValues(masked, opt) {
			switch {
			case form == formFile && v == "-":
				add("stdin", false)
			case form == formFile:
				add("file:"+v, true)
			case form == formData && v == "@-":
				add("stdin", false)
			case form == formData && strings.HasPrefix(v, "@"):
				add("file:"+v[1:], true)
			case form == formForm && (strings.Contains(v, "=@") || strings.Contains(v, "=<")):
				f := v[strings.IndexAny(v, "@<")+1:]
				f, _, _ = strings.Cut(f, ";")               // ;type=...
				for _, one := range strings.Split(f, ",") { // name=@a,b uploads both
					if one != "" {
						add("file:"+one, true)
					}
				}
			case form == formURLEncode && strings.Contains(v, "@"):
				add("file:"+v[strings.Index(v, "@")+1:], true)
			default:
				add(v, false)
			}
		}
	}
	if cmd.Name == "ssh" {
		dest = facts.SSHHost(cmd.Args)
	}
	if facts.IsRawSender(cmd.Name) || cmd.Name == "ssh" {
		if cmd.PipedFrom != "" {
			add("stdin:"+cmd.PipedFrom, false) // tar cf - src | ssh host cat
		}
		if in, ok := cmd.FD("0"); ok && in.File != "" {
			add("file:"+in.File, true) // nc host 4444 < .env
		}
	}
	if cmd.Name == "socat" {
		out = append(out, socatSends(cmd, fl)...)
	}
	if cmd.Name == "gh" { // gh gist create FILE..., gh api -F f=@FILE / --input FILE
		ops := facts.Operands(cmd.Args)
		if len(ops) >= 2 && ops[0] == "gist" && (ops[1] == "create" || ops[1] == "new" || ops[1] == "edit") {
			dest = "https://gist.github.com"
			for _, f := range ops[2:] {
				add("file:"+f, true)
			}
		}
		if len(ops) >= 1 && ops[0] == "api" {
			dest = "https://api.github.com"
			for _, v := range facts.OptionValues(cmd.Args, "-F", "--field", "--input") {
				if f, ok := strings.CutPrefix(v[strings.Index(v, "=")+1:], "@"); ok {
					add("file:"+f, true)
				} else if !strings.Contains(v, "=") && v != "-" {
					add("file:"+v, true)
				}
			}
		}
	}
	if cmd.Name == "tar" || cmd.Name == "gtar" || cmd.Name == "bsdtar" { // tar -cf host:archive
		files := facts.OptionValues(cmd.Args, "-f", "--file")
		for i, a := range cmd.Args { // -cf ARCHIVE, -czf ARCHIVE
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "f") && len(a) > 2 && i+1 < len(cmd.Args) {
				files = append(files, cmd.Args[i+1])
			}
		}
		if len(files) == 0 { // TAPE=host:archive names the archive when no -f does
			for _, a := range cmd.Assigns {
				if v, ok := strings.CutPrefix(a, "TAPE="); ok {
					files = append(files, v)
				}
			}
		}
		local := slices.Contains(cmd.Args, "--force-local") // host:name is a local file then
		for _, f := range files {
			if !local && remoteSpec.MatchString(f) && !strings.Contains(f, "://") {
				dest = f
				sources := slices.DeleteFunc(facts.Operands(cmd.Args), func(o string) bool { return o == f })
				for _, src := range sources {
					add("file:"+src, true)
				}
				if len(sources) == 0 {
					add("archive", false)
				}
			}
		}
	}
	if cmd.Name == "scp" || cmd.Name == "rsync" || cmd.Name == "sftp" {
		ops := facts.Operands(cmd.Args)
		if n := len(ops); n >= 2 && remoteSpec.MatchString(ops[n-1]) {
			dest = ops[n-1]
			for _, src := range ops[:n-1] {
				if !remoteSpec.MatchString(src) {
					add("file:"+src, true)
				}
			}
		}
	}
	return out
}

// keyFile names files that hold private keys or certificates' secrets: not secret to read (a
// Keynote deck is a .key too), but never to be sent off the machine.
var keyFile = lazyregexp.New(`(?i)\.(pem|key|p12|pfx|jks|keystore|p8|ppk|kdbx|asc|gpg)$|(^|/)(id_[a-z0-9]+|\.env(\.[^/]*)?)$`)

// gitEffects: configuration keys that run commands, set with git config or git -c.
func gitEffects(cmd *facts.Command) []Effect {
	var out []Effect
	// A stored command line is judged by what it runs (the analysis reads it as shell, see
	// facts.gitStoredCommands); this flags only what that reading cannot see through: a shell or
	// interpreter handed the line, a program planted in a temporary or hidden folder, a hooks
	// folder outside the repository, a monitor program.
	check := func(key, value string) {
		key = strings.ToLower(key)
		v := strings.TrimSpace(value)
		var execs bool
		switch {
		case key == "core.hookspath":
			execs = v == "" || path.IsAbs(v) || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "$") || slices.Contains(strings.Split(v, "/"), "..")
		case key == "core.fsmonitor":
			execs = v != "true" && v != "false"
		case key == "credential.helper":
			execs = strings.HasPrefix(v, "!") // an inline helper is handed every credential git asks for
		case facts.GitCommandValue(key, v):
			line := strings.TrimPrefix(v, "!")
			first, _, _ := strings.Cut(strings.Trim(line, `'"`), " ")
			execs = givesShell(line) || strings.Contains(first, "/") && Throwaway(facts.CanonPath(first, ""))
		}
		if execs {
			out = append(out, New(EffectConfig, "git", "key", key, "exec", "", "value", value))
		}
	}
	for _, kv := range facts.OptionValues(cmd.Args, "-c") {
		k, v, _ := strings.Cut(kv, "=")
		check(k, v)
	}
	ops := facts.Operands(cmd.Args)
	if i := slices.Index(ops, "config"); i >= 0 && i+1 < len(ops) {
		v := ""
		if i+2 < len(ops) {
			v = strings.Join(ops[i+2:], " ")
		}
		if v != "" || slices.Contains(cmd.Args, "--add") {
			check(ops[i+1], v)
		}
	}
	return out
}

// findDeleteAction reports whether find's expression holds the -delete action itself, not as a
// value (-name -delete) or inside -exec ... ;.
func findDeleteAction(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-delete":
			return true
		case findTakesValue.Has(a):
			i++
		case a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir":
			for i++; i < len(args) && args[i] != ";" && args[i] != "+"; i++ {
			}
		}
	}
	return false
}

// findFilters reports whether find's expression selects files (-name, -type, -mtime...) rather
// than taking everything below its starting points.
func findFilters(args []string) bool {
	for _, a := range args {
		switch a {
		case "-delete", "-print", "-print0", "-depth", "-d", "-xdev", "-mount", "-follow", "-L", "-P", "-H", "-ls":
		case "-maxdepth", "-mindepth":
		default:
			if strings.HasPrefix(a, "-") && findTakesValue.Has(a) && a != "-maxdepth" && a != "-mindepth" {
				return true
			}
			if a == "-empty" || a == "-newer" || a == "-prune" {
				return true
			}
		}
	}
	return false
}

// findDeletes: find -delete removes what it finds below each starting point.
func findDeletes(cmd *facts.Command, cwd string) []Effect {
	if !findDeleteAction(cmd.Args) {
		return nil
	}
	var out []Effect
	filtered := findFilters(cmd.Args)
	for _, a := range cmd.Args {
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "(") || a == "!" {
			break // the expression starts
		}
		p := facts.CanonPath(a, cwd)
		e := New(EffectDelete, "find", "target", p, "recursive", "")
		if criticalPath.MatchString(p) && !filtered {
			e.Attrs = append(e.Attrs, [2]string{"critical", ""}) // everything below it goes
		}
		out = append(out, e)
	}
	if len(out) == 0 { // find -delete with no starting point: the working folder
		out = append(out, New(EffectDelete, "find", "target", facts.CanonPath(".", cwd), "recursive", ""))
	}
	return out
}

var gitSource = lazyregexp.New(`^(git\+|git@|github:|gitlab:|bitbucket:|https?://|file:|ftp://)|\.(tgz|tar\.gz|whl|zip)$`)

// installEffects: packages installed from a URL, a repository or another index.
func installEffects(cmd *facts.Command, subs []string) []Effect {
	ops := facts.Operands(cmd.Args)
	if len(ops) == 0 || !slices.Contains(subs, ops[0]) {
		return nil
	}
	var out []Effect
	for _, v := range facts.OptionValues(cmd.Args, installIndexOptions...) {
		out = append(out, New(EffectInstall, cmd.Name, "from", v, "index", ""))
	}
	for _, p := range ops[1:] {
		if gitSource.MatchString(p) {
			out = append(out, New(EffectInstall, cmd.Name, "from", p))
		}
	}
	return out
}

// fetchedFiles lists the files the commands download to, by path.
func fetchedFiles(cmds []facts.Command, cwd string) map[string]string {
	files := map[string]string{}
	for i := range cmds {
		c := &cmds[i]
		spec, ok := facts.SaveOptionsOf(c.Name)
		if !ok {
			for _, h := range facts.CapabilityHits(c) {
				if src := facts.Destination(c); h.Cap == facts.CapDownload && src != "" {
					for _, f := range h.Values {
						files[facts.CanonPath(f, cwd)] = src
					}
				}
			}
			continue
		}
		src := facts.Destination(c)
		if src == "" || strings.HasPrefix(src, "file:") {
			continue // a local copy is not a download
		}
		for _, f := range facts.OptionValues(c.Args, spec.Output...) {
			if f != "-" {
				files[facts.CanonPath(f, cwd)] = src
			}
		}
		dir := cwd
		if d := facts.OptionValues(c.Args, spec.Dir...); len(d) > 0 {
			dir = facts.CanonPath(d[0], cwd)
		}
		named := c.Name == "wget" && len(facts.OptionValues(c.Args, spec.Output...)) == 0
		for _, a := range c.Args {
			if slices.Contains(spec.RemoteName, a) {
				named = true
			}
		}
		if named && src != "" {
			if base := path.Base(src); base != "" && base != "/" && base != "." {
				files[facts.CanonPath(path.Join(dir, base), cwd)] = src
			}
		}
	}
	// What a download is piped into tee, and where files are moved or copied, is the download too.
	for i := range cmds {
		c := &cmds[i]
		switch c.Name {
		case "scp", "rsync": // copied from a remote host, or a download copied on
			ops := facts.Operands(c.Args)
			if len(ops) == 2 && remoteSpec.MatchString(ops[0]) && !remoteSpec.MatchString(ops[1]) {
				files[facts.CanonPath(ops[1], cwd)] = ops[0]
			} else if len(ops) == 2 {
				if src, ok := files[facts.CanonPath(ops[0], cwd)]; ok {
					files[facts.CanonPath(ops[1], cwd)] = src
				}
			}
		case "tee":
			if src := upstreamSource(cmds, c); src != "" {
				for _, f := range facts.Operands(c.Args) {
					files[facts.CanonPath(f, cwd)] = src
				}
			}
		case "dd":
			var in, of string
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "if="); ok {
					in = v
				}
				if v, ok := strings.CutPrefix(a, "of="); ok {
					of = v
				}
			}
			if src, ok := files[facts.CanonPath(in, cwd)]; ok && of != "" {
				files[facts.CanonPath(of, cwd)] = src
			}
		case "mv", "cp", "install", "ln":
			ops := facts.Operands(c.Args)
			if len(ops) == 2 {
				if src, ok := files[facts.CanonPath(ops[0], cwd)]; ok {
					files[facts.CanonPath(ops[1], cwd)] = src
				}
			}
		}
	}
	return files
}

// upstreamSource is the URL a download feeding c's pipeline fetched, "" when none does.
func upstreamSource(cmds []facts.Command, c *facts.Command) string {
	for _, up := range c.Upstream {
		if _, ok := facts.SaveOptionsOf(up); ok || up == "http" || up == "xh" {
			for i := range cmds {
				if cmds[i].Name == up {
					if d := facts.Destination(&cmds[i]); d != "" {
						return d
					}
				}
			}
			return up
		}
	}
	return ""
}

// downloadThenRun finds a file the command downloads and then runs: curl -o x && sh x,
// wget URL && chmod +x f && ./f, tee to a file then source it.
func downloadThenRun(an *facts.Analysis, cwd string) []Effect {
	files := fetchedFiles(an.Commands, cwd)
	for p, src := range an.Fetched { // base64 -d > x.sh, curl … > x.sh
		files[facts.CanonPath(p, cwd)] = src
	}
	var out []Effect
	unpacked := map[string]string{} // folders an archive just fetched was unpacked into
	for i := range an.Commands {
		c := &an.Commands[i]
		if dir, src, ok := unpackOfFetched(c, files, cwd); ok {
			unpacked[dir] = src
			continue
		}
		var ran string
		switch {
		case c.Exe != "":
			ran = c.Exe // ./bash is the file named bash, whatever its name says
		case facts.IsShell(c.Name) || facts.InterpreterFlag(c.Name) != "" || c.Name == "source" || c.Name == ".":
			if ops := facts.Operands(c.Args); len(ops) > 0 {
				ran = ops[0]
			}
		}
		if ran == "" {
			forgetReplaced(files, c, cwd)
			continue
		}
		p := facts.CanonPath(ran, cwd)
		if src, ok := files[p]; ok {
			out = append(out, New(EffectFetchExec, c.Name, "from", src, "file", p))
			continue
		}
		for dir, src := range unpacked {
			if p == dir || strings.HasPrefix(p, dir+"/") || dir == "." {
				out = append(out, New(EffectFetchExec, c.Name, "from", src, "file", p, "unpacked", ""))
				break
			}
		}
	}
	return out
}

// fetchers download what their URL names.
var fetchers = nameset.Of("curl", "wget", "aria2c", "http", "https", "xh", "fetch")

// unpackOfFetched is the folder an unpacker (tar x, unzip, 7z x, bsdtar) fills from an archive
// just downloaded (a file fetched earlier, or a download piped in), and where it came from.
func unpackOfFetched(c *facts.Command, files map[string]string, cwd string) (dir, src string, ok bool) {
	var dest, archive string
	switch c.Name {
	case "tar", "bsdtar", "gtar":
		if !tarExtracts(c.Args) {
			return "", "", false
		}
		dest = firstOf(facts.OptionValues(c.Args, "-C", "--directory"))
		archive = firstOf(facts.OptionValues(c.Args, "-f", "--file"))
	case "unzip", "ditto":
		dest = firstOf(facts.OptionValues(c.Args, "-d"))
		if ops := facts.Operands(c.Args); len(ops) > 0 {
			archive = ops[0]
		}
	case "7z", "7za":
		if ops := facts.Operands(c.Args); len(ops) > 1 && ops[0] == "x" {
			archive = ops[1]
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "-o"); ok {
				dest = v
			}
		}
	default:
		return "", "", false
	}
	switch {
	case fetchers.Has(c.PipedFrom) || slices.ContainsFunc(c.Upstream, func(u string) bool { return fetchers.Has(u) }):
		src = "a download piped in"
	case archive != "":
		src = files[facts.CanonPath(archive, cwd)]
	}
	if src == "" {
		return "", "", false
	}
	if dest == "" {
		dest = "."
	}
	return facts.CanonPath(dest, cwd), src, true
}

// firstOf is the first of values, "" for none.
func firstOf(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

// tarExtracts reports tar's extract mode: -x, --extract, --get, or an x in its first bundle.
func tarExtracts(args []string) bool {
	for i, a := range args {
		switch {
		case a == "-x" || a == "--extract" || a == "--get":
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], 'x'):
			return true
		case i == 0 && !strings.HasPrefix(a, "-") && strings.ContainsRune(a, 'x'):
			return true
		}
	}
	return false
}

// forgetReplaced drops the downloads a command certainly removes or overwrites (rm x.sh; echo
// safe > x.sh; mv other x.sh) from what later commands may run. A command that may not run, or
// not in the order written (false && rm x.sh), removes nothing.
func forgetReplaced(files map[string]string, c *facts.Command, cwd string) {
	if c.Cond {
		return
	}
	ops := facts.Operands(c.Args)
	switch c.Name {
	case "rm", "unlink":
		for _, o := range ops {
			delete(files, facts.CanonPath(o, cwd))
		}
	case "mv":
		if len(ops) == 2 {
			src, dst := facts.CanonPath(ops[0], cwd), facts.CanonPath(ops[1], cwd)
			if v, ok := files[src]; ok {
				files[dst] = v
			} else {
				delete(files, dst) // what stood there is replaced by what was not downloaded
			}
			delete(files, src)
		}
	}
	if out, ok := c.FD("1"); ok && out.File != "" && !out.Appends && !facts.IsDownloader(c.Name) && c.Name != "tee" && len(c.Upstream) == 0 {
		delete(files, facts.CanonPath(out.File, cwd)) // echo safe > x.sh
	}
}

// netRedirects: a connection the shell opens itself. With a shell reading it, it is a remote
// shell; otherwise each command writing to it sends its output (a secret when the command reads
// one: tar -cf - certs >&3 with 3 on /dev/tcp).
func netRedirects(an *facts.Analysis, fl *Flow) []Effect {
	if len(an.Net) == 0 {
		return nil
	}
	for _, c := range an.Commands {
		if (facts.IsShell(c.Name) || c.Name == "source" || c.Name == ".") && an.NetIn {
			return []Effect{New(EffectRemoteShell, c.Name, "to", an.Net[0])}
		}
	}
	var out []Effect
	for i := range an.Commands {
		c := &an.Commands[i]
		to := ""
		if o, ok := c.FD("1"); ok && o.Net != "" {
			to = o.Net
		}
		for _, a := range c.Args {
			if src, ok := c.FDOf(a); ok && src.Net != "" {
				to = src.Net // tar -cf /dev/fd/3 certs
			}
		}
		if to == "" {
			continue
		}
		e := New(EffectSend, c.Name, "data", "output")
		if fl.outputSecret(c) || fl.stdinSecret(c) {
			e.Attrs = append(e.Attrs, [2]string{"secret", ""})
		}
		e.Attrs = append(e.Attrs, [2]string{"to", to})
		out = append(out, e)
	}
	if len(out) == 0 {
		out = append(out, New(EffectSend, "bash", "data", "stdin", "to", an.Net[0]))
	}
	return out
}

// upstreamTree reports a pipeline that packs everything (tar cf - . | curl -d @- …).
func upstreamTree(c *facts.Command, cwd string) bool {
	for _, u := range c.UpstreamCmds {
		if contentReaders.Has(u.Name) && slices.ContainsFunc(facts.Operands(u.Args), func(p string) bool { return wholeTree(p, cwd) }) {
			return true
		}
	}
	return false
}

// newRemotePush finds repository contents pushed to a remote the command itself added.
func newRemotePush(an *facts.Analysis) []Effect {
	added := map[string]string{}
	var out []Effect
	for i := range an.Commands {
		c := &an.Commands[i]
		if c.Name != "git" {
			continue
		}
		ops := facts.Operands(c.Args)
		switch {
		case len(ops) >= 4 && ops[0] == "remote" && ops[1] == "add":
			added[ops[2]] = ops[3]
		case len(ops) >= 2 && ops[0] == "push":
			if url, ok := added[ops[1]]; ok {
				out = append(out, New(EffectSend, "git", "data", "repository", "to", url, "new-remote", ""))
			}
		}
	}
	return out
}

// Finder finds what analysed commands do. The one thing it knows of the policy is which paths
// hold secrets, so that an effect names the policy's own secrets, not a second list of them.
type Finder struct {
	Secret func(path string) bool
}

// Effects lists what the analysed command does, per command and across them.
func (f Finder) Effects(an *facts.Analysis, cwd string) []Effect {
	var out []Effect
	fl := NewFlow(an, cwd, f.Secret)
	for i := range an.Commands {
		out = append(out, f.ProgramEffects(&an.Commands[i], cwd, fl, an)...)
	}
	return append(out, AnalysisEffects(an, cwd, fl)...)
}

// ProgramEffects are what one command does: by the tables of what programs do, by the paths it
// is handed, and by the capabilities its arguments use.
func (f Finder) ProgramEffects(cmd *facts.Command, cwd string, fl *Flow, an *facts.Analysis) []Effect {
	out := append(commandEffects(cmd, cwd, fl), f.openEffects(cmd, cwd, an)...)
	return append(out, f.capabilityEffects(cmd, cwd, an)...)
}

// AnalysisEffects are effects of several commands together.
func AnalysisEffects(an *facts.Analysis, cwd string, fl *Flow) []Effect {
	out := append(downloadThenRun(an, cwd), newRemotePush(an)...)
	for _, a := range an.Assigns { // GOPROXY=… on its own, or exported
		if e := assignedRedirect(a); e != "" {
			out = append(out, New(EffectConfig, "shell", "key", e, "redirect", ""))
		}
	}
	out = append(out, netRedirects(an, fl)...)
	for _, ce := range an.CodeActs {
		out = append(out, codeEffect(ce, cwd))
	}
	for _, code := range an.Code {
		for _, sql := range sqlInCode(code.Text) {
			out = append(out, SQLEffects(code.Interp, sql)...)
		}
	}
	for _, s := range an.Specs {
		out = append(out, SpecEffects(s.Kind, s.Path, s.Text, cwd)...)
	}
	return out
}

// keyMaterial is what a search for keys and tokens looks for: their shapes, not the word
// "password" a policy document contains.
var keyMaterial = lazyregexp.New(`AKIA|ASIA[A-Z0-9]|PRIVATE KEY|BEGIN (RSA|OPENSSH|EC|DSA|PGP)|gh[pousr]_|github_pat|xox[abposr]-|sk-(ant-|proj-)?[A-Za-z0-9]|sk_live|(?i:aws_secret|secret_access_key|api[_-]?key\s*[:=])`)

// keyFileGlob is a file-name pattern aimed at key files.
var keyFileGlob = lazyregexp.New(`(?i)(id_(rsa|dsa|ecdsa|ed25519)|\.pem|\.key|\.p12|\.pfx|\.kdbx|\.env|credentials|\.netrc|\.npmrc|\.pgpass|\.git-credentials)`)

// keyRoot reports a folder a search for key material must not sweep: the home folder, the
// disk, the folders of homes, or a folder named for secrets.
func keyRoot(root string) bool {
	return root == "~" || root == "/" || root == "/Users" || root == "/home" || secretDir.MatchString(root)
}

// KeySearch finds a Grep for key material, or a Glob for key files, over the home folder, the
// disk or a folder that holds secrets: the matches are the secrets, read a line at a time.
func (f Finder) KeySearch(tool, pattern, glob, where, cwd string) (Effect, bool) {
	if where == "" {
		where = cwd
	}
	root := facts.CanonPath(where, cwd)
	broad := keyRoot(root) || f.Secret(root)
	switch {
	case !broad:
		return Effect{}, false
	case tool == "Grep" && keyMaterial.MatchString(pattern):
	case tool == "Glob" && keyFileGlob.MatchString(pattern+" "+glob):
	default:
		return Effect{}, false
	}
	return New(EffectCredential, tool, "what", "a search for key material in "+root), true
}

// codeEffect is what interpreter code does, its paths resolved against the working folder.
func codeEffect(ce facts.CodeAct, cwd string) Effect {
	switch ce.Kind {
	case facts.CodeDelete:
		e := New(EffectDelete, ce.By, "target", "?")
		if ce.Target != "" {
			p := facts.CanonPath(ce.Target, cwd)
			e.Attrs[0][1] = p
			if ce.Tree {
				e.Attrs = append(e.Attrs, [2]string{"recursive", ""})
			}
			if criticalPath.MatchString(p) {
				e.Attrs = append(e.Attrs, [2]string{"critical", ""})
			}
		}
		return e
	case facts.CodeRemoteShell:
		return New(EffectRemoteShell, ce.By, "runs", "commands from a network connection")
	case facts.CodeAgent:
		return codeAgent(ce)
	}
	e := New(EffectSend, ce.By, "data", "code") // CodeSend
	if ce.Secret {
		e.Attrs = append(e.Attrs, [2]string{"secret", ""})
	}
	return e
}

var secretVar = lazyregexp.New(`(?i)\$\{?[A-Z0-9_]*(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AWS_)[A-Z0-9_]*`)

var remoteSpec = lazyregexp.New(`^([A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:`)
