package effects

import (
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// Path targets of any program. Whatever the program, known or not, a path it is handed (an
// operand, an option's value in any spelling, an @file, a key=file) is something it may open:
// a credential store handed to a program outside the tables is a read of a secret all the same
// (column ~/.ssh/id_rsa, dig -f ~/.ssh/id_ed25519), and a persistence location handed to one is a
// write until the program is known to only read (check_log -O ~/.bashrc). The program's identity
// refines the verdict (a program that only looks at names and modes, a known reader, the key's
// own consumer), it does not decide whether the path is looked at.
//
// Each such path is one effect, "open path=P secret|persist-location by=PROG", judged by the
// effect rules.

// EffectOpen: a program is handed a path it may read or write.
const EffectOpen EffectKind = "open"

// persistLocation names places where what is written runs again later: shell start-up files,
// launchd's and cron's folders, login items, git hooks, the settings of editors and agents that
// run commands, and the system's start-up and preload lists.
var persistLocation = lazyregexp.New(`(?i)` +
	`(^|/)\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zshenv|zprofile|zlogin|zlogout|cshrc|tcshrc|kshrc|xinitrc|xprofile|xsession|lessfilter|lesskey|inputrc|wgetrc|curlrc|npmrc|pythonrc|pythonstartup)$` +
	`|(^|/)\.config/(fish/config\.fish|autostart(/|$)|systemd/user(/|$))` +
	`|^(~|/System)?/Library/(LaunchAgents|LaunchDaemons|StartupItems)(/|$)` +
	`|^~/Library/Application Support/com\.apple\.backgroundtaskmanagementagent(/|$)` +
	`|^/(private/)?etc/(cron[^/]*|crontab|anacrontab|rc\.local|rc\.common|profile|profile\.d|bashrc|bash\.bashrc|zshrc|zprofile|zshenv|ld\.so\.preload|periodic|emond\.d|launchd\.conf|systemd/system|init\.d|update-motd\.d|sudoers|sudoers\.d)(/|$)` +
	`|^/(private/)?var/(spool/cron|at|spool/at)(/|$)|^/usr/lib/cron/tabs(/|$)` +
	`|(^|/)\.ssh/(authorized_keys[^/]*|rc)$` +
	`|(^|/)\.git/hooks/|(^|/)\.git/config$|(^|/)\.gitconfig$|(^|/)\.config/git/config$` +
	`|(^|/)\.vscode/(tasks|settings|launch)\.json$|(^|/)\.claude/(settings[^/]*\.json$|hooks/)|(^|/)\.mcp\.json$` +
	`|(^|/)\.cursor/(mcp|settings)\.json$` +
	`|(^|/)(site|dist)-packages/([^/]+\.pth|sitecustomize\.py|usercustomize\.py)$|(^|/)\.(irbrc|pryrc|gemrc|perldb|pdbrc|pythonrc\.py)$`)

// readsContent reports whether a names-only program is given an option with which it reads a
// file's content after all (file -f LIST, -fLIST, --files-from=LIST).
func readsContent(cmd *facts.Command) bool {
	for _, a := range cmd.Args {
		name, _, _ := strings.Cut(a, "=")
		for _, o := range namesOnlyUnless.Get()[cmd.Name] {
			if name == o || len(o) == 2 && strings.HasPrefix(a, o) {
				return true
			}
		}
	}
	return false
}

// PathValues are the paths a command is handed: its operands, and every option's value however
// it is spelled (-f FILE, -fFILE, --file=FILE, --file FILE, @FILE, --opt=@FILE, if=FILE).
// A value is a path when it looks like one (a slash, a ~, a leading dot) or is a secret's bare
// file name.
func PathValues(cmd *facts.Command) []HandedPath {
	var out []HandedPath
	add := func(v, opt string) {
		v = strings.TrimPrefix(v, "@")
		if v != "" && (facts.LooksLikePath(v) || SecretName(v)) && !strings.Contains(v, "://") && !strings.ContainsAny(v, " \t\n") {
			out = append(out, HandedPath{Value: v, Opt: opt})
		}
	}
	for i := 0; i < len(cmd.Args); i++ {
		a := cmd.Args[i]
		switch {
		case a == "--":
			for _, rest := range cmd.Args[i+1:] {
				add(rest, "")
			}
			return out
		case strings.HasPrefix(a, "--"):
			name, value, inline := strings.Cut(a, "=")
			if inline {
				add(value, name)
			} else if i+1 < len(cmd.Args) && !strings.HasPrefix(cmd.Args[i+1], "-") && facts.LooksLikePath(cmd.Args[i+1]) {
				add(cmd.Args[i+1], name) // --config FILE; an operand after a flag is caught here too
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if len(a) > 2 && (strings.ContainsAny(a[2:3], "/~.@")) {
				add(a[2:], a[:2]) // -f/path, -f~/x, -T@file
			} else if i+1 < len(cmd.Args) && !strings.HasPrefix(cmd.Args[i+1], "-") && (facts.LooksLikePath(cmd.Args[i+1]) || SecretName(cmd.Args[i+1])) {
				add(cmd.Args[i+1], a)
				i++
			}
		default:
			if k, v, ok := strings.Cut(a, "="); ok && k != "" && !strings.ContainsAny(k, "/~") {
				add(v, k+"=") // if=FILE, input=FILE
			} else {
				add(a, "")
			}
		}
	}
	return out
}

// embeddedPath is a path inside a longer argument or in the text fed to a program's standard
// input: code (julia -e '…open("~/.x")…'), a configuration line (apache2ctl -c 'Include F'),
// an address (socat open:F,creat), a script read from a here-document (jshell <<EOF /open F).
var embeddedPath = lazyregexp.New(`(?:^|[\s'"({\[=:,<>])((?:~[a-z_]*|/)[^\s'"(){}\[\],;:<>|&*?$\\]+)`)

// messageOptions carry prose, where a path is a word, not a file (git commit -m "fix ~/.zshrc").
var messageOptions = []string{"-m", "--message", "--title", "--body", "--notes", "--subject", "--description"}

// EmbeddedPaths are the paths inside a command's arguments and here-document; those an
// argument is as a whole are PathValues'.
func EmbeddedPaths(cmd *facts.Command) []HandedPath {
	var texts []string
	for i, a := range cmd.Args {
		if i > 0 && slices.Contains(messageOptions, cmd.Args[i-1]) || slices.ContainsFunc(messageOptions, func(o string) bool { return strings.HasPrefix(a, o+"=") }) {
			continue
		}
		texts = append(texts, a)
	}
	if in, ok := cmd.FDs["0"]; ok && in.Lit {
		texts = append(texts, in.Text)
	}
	var out []HandedPath
	for _, t := range texts {
		if len(t) > maxEmbeddedScan {
			t = t[:maxEmbeddedScan]
		}
		if !strings.ContainsAny(t, "~/") {
			continue // every path starts with one: the expression need not be compiled for a word
		}
		for _, m := range embeddedPath.FindAllStringSubmatch(t, -1) {
			if m[1] != t { // a whole argument is PathValues' to judge, with its option
				out = append(out, HandedPath{Value: m[1], Opt: "embedded"})
			}
		}
	}
	return out
}

// maxEmbeddedScan bounds the text searched for paths in one argument or here-document.
const maxEmbeddedScan = 64 << 10

// HandedPath is one path a command is handed, and the option that handed it ("" for an operand).
type HandedPath struct{ Value, Opt string }

// openEffects are the effects of the paths a command is handed: a secret, whatever the program
// (but those that only look at names, and a key's own consumer); a persistence location, unless
// the program is known to only read.
func (f Finder) openEffects(cmd *facts.Command, cwd string, an *facts.Analysis) []Effect {
	if cmd.Name == "" || namesOnly.Has(cmd.Name) && !readsContent(cmd) {
		return nil
	}
	var out []Effect
	handed := PathValues(cmd)
	if !readers.Has(cmd.Name) && !facts.IsShell(cmd.Name) { // a shell's -c is parsed as shell
		whole := map[string]bool{}
		for _, pa := range handed {
			whole[pa.Value] = true
		}
		stored := facts.StoredCommands(cmd)
		for _, pa := range EmbeddedPaths(cmd) {
			// The code of a known interpreter is analysed as code, which judges its reads
			// (read.secrets); a start-up file it names is judged here. So is a command line
			// stored for later (git config core.sshCommand 'ssh -i KEY'): its paths are its own.
			if slices.ContainsFunc(stored, func(line string) bool { return strings.Contains(line, pa.Value) }) {
				continue
			}
			if !whole[pa.Value] && (facts.InterpreterFlag(cmd.Name) == "" || persistLocation.MatchString(facts.CanonPath(pa.Value, cwd))) {
				handed = append(handed, pa)
			}
		}
	}
	for _, pa := range handed {
		p := facts.CanonPath(pa.Value, cwd)
		switch {
		case readers.Has(cmd.Name):
			// the known readers' files are judged by the read rules, option by option (bashItems)
		case f.secretStore(p) && !consumes(cmd.Name, pa.Opt):
			out = append(out, New(EffectOpen, cmd.Name, "path", p, "secret", ""))
		case persistLocation.MatchString(p) && !readers.Has(cmd.Name) && !persistReaders.Has(cmd.Name) && !ordinaryTee(cmd, an, pa.Value, p):
			out = append(out, New(EffectOpen, cmd.Name, "path", p, "persist-location", ""))
		}
	}
	return out
}

// ordinaryTee reports tee appending known text that is an ordinary configuration of the file's
// kind (a PATH line to ~/.zshrc): the write rules judge it as such (facts.ReadConfigFile).
func ordinaryTee(cmd *facts.Command, an *facts.Analysis, target, p string) bool {
	return cmd.Name == "tee" && an != nil && an.WritesOrdinaryConfig(target, p)
}

// consumes reports whether a program uses a key through this option as its owner meant.
func consumes(prog, opt string) bool {
	return keyOwners.Has(prog) || opt != "" && slices.Contains(keyConsumers.Get()[prog], opt)
}

// secretStore reports whether a path holds credentials by the policy's read rules, a project's
// environment file aside: the programs that run a project read its .env (node --env-file,
// docker compose --env-file), and read.dotenv judges the ones that would print it.
func (f Finder) secretStore(p string) bool {
	return f.Secret(p) && !IsDotenv(p)
}

// SecretName: bare file names that hold secrets wherever they are (cat id_rsa).
// SecretName reports a bare file name that is a key or credential file: id_rsa (and its kin,
// with _sk), credentials[.ext], env or .env[.suffix]. String tests, not a pattern (see noProject;
// secretNamePattern in the tests is its specification).
func SecretName(s string) bool {
	switch s {
	case "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_rsa_sk", "id_dsa_sk", "id_ecdsa_sk", "id_ed25519_sk", "credentials", "env", ".env":
		return true
	}
	if ext, ok := strings.CutPrefix(s, "credentials."); ok {
		return ext != "" && strings.Trim(ext, "abcdefghijklmnopqrstuvwxyz") == ""
	}
	if suffix, ok := strings.CutPrefix(strings.TrimPrefix(s, "."), "env."); ok {
		return suffix != "" && strings.Trim(suffix, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
	}
	return false
}
