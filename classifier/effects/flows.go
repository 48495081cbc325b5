package effects

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
)

// Where the data a command sends comes from. A secret is rarely sent by name: it is piped
// (cat key | curl -d @-), staged in a file first (cp key blob; curl -T blob), packed (tar cf - certs),
// compressed (gzip -k key; curl -T key.gz), or it is the environment (env | curl). The flow
// analysis follows those steps within one command line, so that the send is judged by what it
// carries. It never reads the disk: what a path holds is judged by its name and by what the
// command line itself put there.

// secretDir names folders that hold keys and certificates, wherever they are.
var secretDir = lazyregexp.New(`(?i)(^|/)(certs?|certificates|keys|secrets?|private|\.ssh|\.gnupg|\.aws|\.azure|\.kube|\.docker|credentials|keychains?|ssl/private)(/|$)`)

// secretFileName names files kept to hold secrets, whatever folder they are in.
var secretFileName = lazyregexp.New(`(?i)^(secrets?|credentials?|passwords?|passwd|tokens?|api[_-]?keys?)([._-][^/]*)?$`)

// credentialPattern is what a search for credentials looks for.
var credentialPattern = lazyregexp.New(`(?i)AKIA|ASIA[A-Z0-9]|PRIVATE KEY|BEGIN (RSA|OPENSSH|EC|DSA|PGP)|gh[pousr]_|github_pat|xox[abposr]-|sk-[a-z0-9]|sk_live|password|passwd|secret|token|api[_-]?key|access[_-]?key|credential|bearer`)

// Flow is what the command line's own steps put in files: paths that hold a secret because a
// command wrote one there.
type Flow struct {
	cwd     string
	named   func(string) bool // the policy's secret paths
	tainted []string          // paths (files or folders) holding a secret the line put there
	known   map[string]bool   // secret's answers so far
	stems   []string          // p such that p.<suffix> holds a secret (gzip -k p, -S suffix)
	dumps   []string          // files holding a database's or secret store's dump the line wrote
}

// maxTainted bounds what one command line can taint.
const maxTainted = 256

// NewFlow follows the commands in order, marking where secrets land.
func NewFlow(an *facts.Analysis, cwd string, named func(string) bool) *Flow {
	f := &Flow{cwd: cwd, named: named}
	for i := range an.Commands {
		f.step(&an.Commands[i])
	}
	return f
}

// secret reports whether a path holds a secret: by its name, its folder's name, or because the
// command line put one there (in it, or below it).
func (f *Flow) secret(p string) bool {
	if p == "" {
		return false
	}
	if v, ok := f.known[p]; ok {
		return v
	}
	v := f.judge(p)
	if f.known == nil {
		f.known = map[string]bool{}
	}
	f.known[p] = v
	return v
}

// secretIn is secret for a path a command packs or copies: without recursion (tar
// --no-recursion, rsync --no-recursive) a folder goes without what it holds, so only its own
// name counts.
func (f *Flow) secretIn(c *facts.Command, p string) bool {
	if !noRecursion(c) || strings.ContainsAny(p, "*?[") {
		return f.secret(p)
	}
	cp := facts.CanonPath(p, f.cwd)
	return f.named(cp) || keyFile.MatchString(cp) || secretFileName.MatchString(path.Base(cp)) || slices.Contains(f.tainted, cp)
}

func noRecursion(c *facts.Command) bool {
	switch c.Name {
	case "tar", "gtar", "bsdtar":
		return slices.Contains(c.Args, "--no-recursion")
	case "rsync":
		return slices.Contains(c.Args, "--no-recursive") || slices.Contains(c.Args, "--no-r")
	}
	return false
}

func (f *Flow) judge(p string) bool {
	cp := facts.CanonPath(p, f.cwd)
	if f.named(cp) || keyFile.MatchString(cp) || secretFileName.MatchString(path.Base(cp)) || secretDir.MatchString(strings.TrimRight(p, "/*")) || secretDir.MatchString(cp) {
		return true
	}
	for _, t := range f.tainted {
		if cp == t || strings.HasPrefix(t, strings.TrimSuffix(cp, "/*")+"/") || strings.HasPrefix(cp, t+"/") {
			return true
		}
	}
	for _, s := range f.stems {
		if strings.HasPrefix(cp, s+".") {
			return true
		}
	}
	return false
}

func (f *Flow) taint(p string) {
	if p != "" && p != "-" && len(f.tainted) < maxTainted {
		f.tainted = append(f.tainted, facts.CanonPath(p, f.cwd))
		clear(f.known)
	}
}

// step marks where one command puts a secret it reads.
func (f *Flow) step(c *facts.Command) {
	carries := f.outputSecret(c) || f.stdinSecret(c)
	out, hasOut := c.FD("1")
	if hasOut && out.File != "" && carries {
		f.taint(out.File) // cat key > blob
	}
	dumping := dumps(c)
	if hasOut && out.File != "" && out.File != "-" && (dumping || f.stdinDump(c)) && len(f.dumps) < maxTainted {
		f.dumps = append(f.dumps, facts.CanonPath(out.File, f.cwd)) // pg_dump db > d.sql; curl -T d.sql
	}
	if dumping && len(f.dumps) < maxTainted {
		for _, o := range facts.OptionValues(c.Args, "-f", "--file", "--result-file", "-r") { // pg_dump -f, mysqldump -r
			f.dumps = append(f.dumps, facts.CanonPath(o, f.cwd))
		}
	}
	ops := facts.Operands(c.Args)
	switch c.Name {
	case "cp", "mv", "ln", "link", "install", "ditto", "rsync":
		if len(ops) >= 2 && !remoteSpec.MatchString(ops[len(ops)-1]) && slices.ContainsFunc(ops[:len(ops)-1], f.secret) {
			f.taint(ops[len(ops)-1])
		}
	case "tee":
		if carries {
			for _, o := range ops {
				f.taint(o)
			}
		}
	case "gzip", "bzip2", "xz", "zstd", "lz4", "pigz", "compress", "brotli":
		for _, o := range ops {
			if f.secret(o) && len(f.stems) < maxTainted {
				f.stems = append(f.stems, facts.CanonPath(o, f.cwd)) // key → key.gz, key.packed
				clear(f.known)
			}
		}
	case "openssl", "gpg", "age":
		if slices.ContainsFunc(facts.OptionValues(c.Args, "-in", "--input", "-i"), f.secret) || carries {
			for _, o := range facts.OptionValues(c.Args, "-out", "--output", "-o") {
				f.taint(o)
			}
		}
	}
	if archive, members := archiveOf(c); archive != "" && (slices.ContainsFunc(members, f.secret) || carries) {
		f.taint(archive) // tar cf blob.tgz certs; zip blob.zip key
	}
}

// archiveOf returns the archive a command creates and what it packs into it.
func archiveOf(c *facts.Command) (string, []string) {
	ops := facts.Operands(c.Args)
	switch c.Name {
	case "tar", "gtar", "bsdtar":
		files := facts.OptionValues(c.Args, "-f", "--file")
		for i, a := range c.Args {
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "f") && len(a) > 2 && i+1 < len(c.Args) {
				files = append(files, c.Args[i+1])
			}
		}
		if len(files) == 0 || files[0] == "-" {
			return "", nil
		}
		return files[0], slices.DeleteFunc(ops, func(o string) bool { return o == files[0] })
	case "zip", "7z", "7za", "rar":
		if c.Name != "zip" && len(ops) > 0 && (ops[0] == "a" || ops[0] == "u") {
			ops = ops[1:]
		}
		if len(ops) >= 1 {
			return ops[0], ops[1:]
		}
	}
	return "", nil
}

// outputSecret reports whether what the command prints holds a secret: a secret file it reads,
// the environment, or the matches of a search for credentials.
func (f *Flow) outputSecret(c *facts.Command) bool {
	if in, ok := c.FD("0"); ok && in.File != "" && f.secret(in.File) {
		return true // cmd < .env
	}
	ops := facts.Operands(c.Args)
	switch {
	case c.Name == "env" || c.Name == "printenv":
		// the whole environment (tokens included); env -i, printenv PATH print none of it
		return len(ops) == 0 && !slices.Contains(c.Args, "-i") && !slices.Contains(c.Args, "--ignore-environment")
	case c.Name == "export" || c.Name == "declare" || c.Name == "typeset":
		return len(ops) == 0 && (slices.Contains(c.Args, "-p") || slices.Contains(c.Args, "-x"))
	case c.Name == "set":
		return len(c.Args) == 0
	case searchers.Has(c.Name):
		return f.searchesForCredentials(c, ops)
	case contentReaders.Has(c.Name):
		if c.Name == "sed" || c.Name == "awk" || c.Name == "jq" || c.Name == "yq" {
			if len(ops) > 0 && !slices.ContainsFunc(c.Args, func(a string) bool { return a == "-e" || a == "-f" }) {
				ops = ops[1:] // the program comes first
			}
		}
		if c.Name == "dd" {
			for _, a := range c.Args {
				if p, ok := strings.CutPrefix(a, "if="); ok && f.secret(p) {
					return true
				}
			}
		}
		if slices.ContainsFunc(facts.OptionValues(c.Args, "-in", "-C", "--directory"), f.secret) && c.Name == "openssl" {
			return true
		}
		if slices.ContainsFunc(ops, func(p string) bool { return f.secretIn(c, p) }) {
			return true
		}
		if c.Name == "tar" || c.Name == "gtar" || c.Name == "bsdtar" || c.Name == "zip" || c.Name == "cpio" {
			// what a list names: tar -T list, --files-from; those lists are not read here
			return false
		}
	}
	return false
}

// searchesForCredentials: grep -r AKIA ~, rg 'BEGIN .* PRIVATE KEY'. A search of one file that
// is not a secret prints no secret.
func (f *Flow) searchesForCredentials(c *facts.Command, ops []string) bool {
	patterns := facts.OptionValues(c.Args, "-e", "--regexp")
	files := ops
	if len(patterns) == 0 && len(ops) > 0 {
		patterns, files = ops[:1], ops[1:]
	}
	if slices.ContainsFunc(files, f.secret) {
		return true
	}
	if !slices.ContainsFunc(patterns, credentialPattern.MatchString) {
		return false
	}
	recursive := c.Name != "grep" && c.Name != "egrep" && c.Name != "fgrep" || slices.ContainsFunc(c.Args, func(a string) bool {
		return a == "--recursive" || a == "--dereference-recursive" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR")
	})
	return recursive
}

// stdinDump reports whether a dump reaches the command's standard input, through the pipeline
// or a redirection from a file the line dumped into.
func (f *Flow) stdinDump(c *facts.Command) bool {
	if in, ok := c.FD("0"); ok && in.File != "" && f.dumped(in.File) {
		return true
	}
	for i := range c.UpstreamCmds {
		u := &c.UpstreamCmds[i]
		if dumps(u) || slices.ContainsFunc(facts.Operands(u.Args), f.dumped) && contentReaders.Has(u.Name) {
			return true
		}
	}
	return false
}

// dumped reports a file this command line dumped a database or secret store into (or a
// compressed copy of one: d.sql.gz).
func (f *Flow) dumped(p string) bool {
	cp := facts.CanonPath(p, f.cwd)
	return slices.ContainsFunc(f.dumps, func(d string) bool { return cp == d || strings.HasPrefix(cp, d+".") })
}

// stdinSecret reports whether what reaches the command's standard input holds a secret: through
// the pipeline (however many steps: cat key | base64 | curl -d @-) or a redirection.
func (f *Flow) stdinSecret(c *facts.Command) bool {
	if in, ok := c.FD("0"); ok && in.File != "" && f.secret(in.File) {
		return true
	}
	for i := range c.UpstreamCmds {
		if f.outputSecret(&c.UpstreamCmds[i]) {
			return true
		}
	}
	return false
}

// wholeTree reports a path that stands for everything: the working folder, the home folder, the
// root. Sending it sends whatever secrets it holds.
func wholeTree(p, cwd string) bool {
	cp := facts.CanonPath(strings.TrimSuffix(strings.TrimSuffix(p, "/*"), "/"), cwd)
	switch cp {
	case facts.CanonPath(".", cwd), "~", "/", "/Users", "/home":
		return p != ""
	}
	return false
}

// socatAddr is one side of a socat relay, as far as sends go.
type socatAddr struct {
	net    string // where it connects or listens, when it is the network
	file   string // the file it reads, when it is one
	secret bool   // what it yields holds a secret
	data   bool   // it yields data at all
}

// socatSends finds socat relaying local data to the network: a file (OPEN:key TCP:host), a
// command's output (EXEC:'cat key' TCP:host), or onto a descriptor the line opened on a
// connection (FD:3), or into a network client it starts (EXEC:'curl -d @- host').
func socatSends(cmd *facts.Command, fl *Flow) []Effect {
	var addrs []socatAddr
	for _, a := range facts.Operands(cmd.Args) {
		for _, part := range strings.Split(strings.Trim(a, `'"`), "!!") { // read!!write
			addrs = append(addrs, fl.socatAddress(cmd, part))
		}
	}
	var net, src *socatAddr
	for i := range addrs {
		switch {
		case addrs[i].net != "" && net == nil:
			net = &addrs[i]
		case addrs[i].data && src == nil:
			src = &addrs[i]
		}
	}
	if net == nil || src == nil {
		return nil
	}
	e := New(EffectSend, "socat", "data", "output")
	if src.file != "" {
		e.Attrs[0][1] = "file:" + facts.CanonPath(src.file, fl.cwd)
	}
	if src.secret {
		e.Attrs = append(e.Attrs, [2]string{"secret", ""})
	}
	e.Attrs = append(e.Attrs, [2]string{"to", net.net})
	return []Effect{e}
}

var socatNet = nameset.Of("TCP", "TCP4", "TCP6", "UDP", "UDP4", "UDP6", "SCTP",
	"OPENSSL", "SSL", "VSOCK-CONNECT", "SOCKS4", "SOCKS4A", "SOCKS5", "PROXY",
	"TCP-LISTEN", "TCP4-LISTEN", "TCP6-LISTEN", "UDP-LISTEN", "OPENSSL-LISTEN",
	"UDP-SENDTO", "UDP-DATAGRAM", "DTLS")

func (f *Flow) socatAddress(cmd *facts.Command, addr string) socatAddr {
	kind, rest, _ := strings.Cut(addr, ":")
	kind = strings.ToUpper(kind)
	rest = strings.Trim(rest, `'"`)
	opt := func(s string) string { v, _, _ := strings.Cut(s, ","); return v }
	switch {
	case socatNet.Has(kind):
		return socatAddr{net: opt(rest)}
	case kind == "OPEN" || kind == "GOPEN" || kind == "FILE" || kind == "READLINE" || kind == "PIPE":
		p := opt(rest)
		return socatAddr{file: p, data: true, secret: f.secret(p)}
	case kind == "FD":
		n, err := strconv.ParseInt(opt(rest), 0, 32)
		if err != nil {
			return socatAddr{}
		}
		if src, ok := cmd.FDs[strconv.FormatInt(n, 10)]; ok && src.Net != "" {
			return socatAddr{net: src.Net}
		}
	case kind == "EXEC" || kind == "SYSTEM":
		an := facts.Analyze(opt(rest))
		var out socatAddr
		for i := range an.Commands {
			c := &an.Commands[i]
			if d := facts.Destination(c); d != "" && (sendOptions.Get()[c.Name] != nil || facts.IsRawSender(c.Name) || otherSenders.Has(c.Name)) {
				out.net = d // EXEC:'curl --data-binary @- host': a client that sends what it is given
			}
			out.data = true
			out.secret = out.secret || f.outputSecret(c)
		}
		return out
	}
	return socatAddr{}
}
