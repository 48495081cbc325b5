package classifier

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/flow"
)

// TargetFlow rules match a session's flow: one line per call that sends, naming what the
// session took in and read before it (see rules/flow.rules). The classifier knows no session:
// the caller keeps the flow (package flow) and asks JudgeFlow.
const TargetFlow Target = "flow"

// Facets is what one call means for a session's flow, each "" when it does not apply: the
// untrusted content it takes in (its source), the private data it reads (what), and where it can
// send data: any call that reaches outside, whatever it looks like it carries.
type Facets struct {
	Untrusted string
	Private   string
	Send      string
	// Via says how a send's data would travel (see the Via constants).
	Via string
	// Encoded: Text holds a token that looks like encoded data (see dataLike).
	Encoded bool
	// Text is what of the call a send's data would travel in (URLs, names, header values,
	// literal bodies, a connector's arguments), for the session's prints to be looked for in.
	Text string
}

// How a send's data travels.
const (
	// ViaText: only in the call's own text, literally (a URL, a host name, a header): what the
	// session read is there to be found, or was not sent.
	ViaText = "text"
	// ViaFree: in free text the agent writes (a comment, a request body): found when copied, but
	// it can be put in other words, so a send of it is judged by its shape until the session's
	// private read is seen.
	ViaFree = "free"
	// ViaElsewhere: from outside the call's text (a file uploaded, standard input, a push, a
	// raw connection, code that computes what it sends): it may carry anything.
	ViaElsewhere = "elsewhere"
)

// sendWords are the words of a connector tool's name that make a call a send: it writes
// somewhere others read.
var sendWords = nameset.Of("create", "post", "comment", "update", "push",
	"send", "publish", "write", "add", "reply", "upload", "share",
	"edit", "merge", "fork", "submit", "put", "set")

// FlowOf is what the call p means for its session's flow. Sources and destinations the policy
// trusts (trusted_sources: hosts, or MCP servers as mcp:<name>) are neither untrusted nor outward.
// An evaluation gives the same in Verdict.Flow without reading the call twice.
func (c *Classifier) FlowOf(p claudehook.Payload) Facets {
	if c.denyAll != "" {
		return Facets{}
	}
	items, _ := c.items(p, machine{})
	return c.facetsOf(p, items)
}

// facetsOf is FlowOf from the items an evaluation made of the call: a shell command is not
// analysed again.
func (c *Classifier) facetsOf(p claudehook.Payload, items []item) Facets {
	str := func(k string) string { // read only by the tools whose facets are in their input
		var in map[string]json.RawMessage
		_ = json.Unmarshal(p.ToolInput, &in)
		var s string
		_ = json.Unmarshal(in[k], &s)
		return s
	}
	var f Facets
	switch tool := normalisedTool(p.ToolName); tool {
	case "WebFetch":
		u := str("url")
		host := hostOfURL(u)
		f.Untrusted = "web:" + host
		f.Send, f.Via, f.Encoded, f.Text = host, ViaText, carriesData(u), u // its URL goes out
	case "WebSearch":
		f.Untrusted = "web:search"
	case "Read":
		path := facts.CanonPath(str("file_path"), p.Cwd)
		switch {
		case c.privatePath(path, facts.CanonPath(".", p.Cwd)):
			f.Private = path
		case strings.Contains(path, "/uploads/"):
			f.Untrusted = "upload:" + path
		}
	case "Grep", "Glob":
		// A search reads what it finds (Grep prints it; Glob names it): private as a Read of
		// where it searches would be.
		if path := facts.CanonPath(cmp.Or(str("path"), "."), p.Cwd); c.privatePath(path, facts.CanonPath(".", p.Cwd)) {
			f.Private = path
		}
	case "Bash":
		f = shellFacets(items)
		// A private read is private whichever program makes it: cat, head, sed, grep, an
		// interpreter's open(...) of a place the read rules protect.
		for _, it := range items {
			if f.Private != "" {
				break
			}
			if it.target == TargetRead && !it.search && c.privatePath(it.text, facts.CanonPath(".", cmp.Or(it.cwd, p.Cwd))) {
				f.Private = it.text
			}
		}
	default:
		if server, name, ok := mcpName(p.ToolName); ok {
			// Every call sends its arguments to the connector's server: a write in words the
			// agent chooses, a read in the query it names (search_issues(query=<a key>)).
			f.Send, f.Via, f.Text = "mcp:"+server, ViaText, string(p.ToolInput[:min(len(p.ToolInput), maxFlowText)])
			if effects.NameHas(sendWords, name) {
				f.Via = ViaFree
			} else {
				f.Untrusted = "mcp:" + server
				f.Encoded = argsCarryData(p.ToolInput)
			}
		}
	}
	if c.trusted(f.Untrusted) {
		f.Untrusted = ""
	}
	if f.Send == "" || c.trusted(f.Send) {
		f.Send, f.Via, f.Encoded, f.Text = "", "", false, ""
	}
	return f
}

// maxFlowText bounds Facets.Text: the session's prints are looked for in this much of a call.
const maxFlowText = 64 << 10

// privatePath reports whether reading p reads private data: a place a read rule protects (denied
// or asked about: a project's .env the user lets the agent read is private all the same), or a
// file in the home outside the folder the call works in (another repository, the user's own
// documents).
func (c *Classifier) privatePath(p, cwd string) bool {
	if _, ok := c.match(item{target: TargetRead, text: p}); ok {
		return true
	}
	return strings.HasPrefix(p, "~/") && cwd != "." && cwd != "~" && p != cwd && !strings.HasPrefix(p, strings.TrimSuffix(cwd, "/")+"/")
}

// downloaders are the programs that fetch what a URL serves.
var downloaders = nameset.Of("curl", "wget", "http", "https", "aria2c", "xh", "fetch")

// carriesData reports whether a URL carries data out beyond naming a page: a query or a
// fragment, or a path segment or subdomain that looks like encoded data (a page's address alone
// is what reading documentation looks like; https://x.example/ZXhmaWx0cmF0ZWQ is not).
func carriesData(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return false
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return true
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if dataLike(seg) {
			return true
		}
	}
	return dataHost(u.Hostname())
}

// dataHost reports a host name one of whose labels below the domain looks like encoded data:
// what a DNS lookup or a URL's subdomain carries out.
func dataHost(host string) bool {
	labels := strings.Split(host, ".")
	for i, l := range labels {
		if i < len(labels)-2 && dataLike(l) {
			return true
		}
	}
	return false
}

// dataLike reports a token that looks like data encoded to travel in a name: 16 characters or
// more of base64, hex or percent-encoding, with digits among the letters (words and slugs of
// documentation have none, or separators).
func dataLike(s string) bool {
	if len(s) < 16 {
		return false
	}
	digits, letters := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letters++
		case r == '+' || r == '=' || r == '%' || r == '_' || r == '/':
		default:
			return false // '-' and '.': words of a slug
		}
	}
	return digits >= 2 && letters >= 2
}

// netSenders are programs that reach another machine with what their arguments say: the
// destination is the first host named.
var netSenders = nameset.Of("curl", "wget", "http", "https", "xh", "aria2c", "curlie",
	"nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "websocat", "wscat",
	"ftp", "tftp", "ping", "ping6", "dig", "nslookup", "host", "drill", "kdig", "delv",
	"getent", "dscacheutil", "resolvectl", "whois", "traceroute", "tracepath", "mtr", "nping",
	"lynx", "w3m", "links", "elinks")

// openers hand a URL to the browser, which asks for it: what the URL carries is sent.
var openers = nameset.Of("open", "xdg-open", "gio", "sensible-browser", "x-www-browser", "firefox",
	"google-chrome", "chromium", "chromium-browser", "safari")

// storageCopiers copy files to a cloud store when their last operand is the store's address:
// aws s3 cp F s3://b/, gsutil cp F gs://b, gcloud storage cp, rclone copy F remote:, az storage
// blob upload, azcopy copy F https://…, s3cmd put, mc cp F alias/b.
var storageCopiers = nameset.Of("aws", "gsutil", "gcloud", "rclone", "az", "azcopy", "s3cmd", "mc")

// storageVerbs are the subcommands of storageCopiers that put files somewhere.
var storageVerbs = nameset.Of("cp", "mv", "sync", "rsync", "copy", "copyto", "move", "moveto",
	"rcat", "put", "upload", "upload-batch", "put-object", "upload-part")

// publishers are the subcommands that send a package or commits to a registry or remote.
var publishers = lazy.Value[map[string]string]{Make: func() map[string]string {
	return map[string]string{"npm": "publish", "yarn": "publish", "pnpm": "publish", "bun": "publish",
		"twine": "upload", "gem": "push", "cargo": "publish", "poetry": "publish", "docker": "push", "podman": "push", "git": "push"}
}}

// netCode is interpreter code that opens a connection: its data may go wherever the code says.
var netCode = lazyregexp.New(`urllib|requests\.|http\.client|httpx|aiohttp|socket\.|smtplib|ftplib|fetch\(|https?\.(get|request)|net\.connect|XMLHttpRequest|Net::HTTP|open-uri|LWP::|IO::Socket|dns\.resolver|gethostbyname|getaddrinfo|` +
	`curl_init|fsockopen|stream_socket_client|file_get_contents\(\s*["']https?:|Invoke-WebRequest|Invoke-RestMethod|Net\.WebClient|HttpClient|Socket\.tcp|TCPSocket|open location`)

// send is where one command can send data, and how (see Facets).
type send struct {
	dest, via string
	encoded   bool
	text      []string
}

// sendOf is where a shell command can send data, by what it can do rather than how it is
// spelled: a network program reaching a URL or a host (what its URL, name, headers and literal
// body carry), git push and package publishing, raw connections, and interpreter code that opens
// a connection. Its dest is "" for none.
func sendOf(cmd *facts.Command) send {
	name := cmd.Name
	if sub, ok := publishers.Get()[name]; ok && slices.Contains(cmd.Args, sub) {
		return send{dest: name + ":" + sub, via: ViaElsewhere}
	}
	if netSenders.Has(name) {
		return netSend(cmd)
	}
	if openers.Has(name) {
		return urlSend(cmd)
	}
	if storageCopiers.Has(name) {
		return storageSend(cmd)
	}
	if facts.InterpreterFlag(name) != "" {
		for _, a := range cmd.Args {
			if netCode.MatchString(a) {
				return send{dest: name + ":network", via: ViaElsewhere}
			}
		}
	}
	return send{}
}

// bodyFlags are a network program's options whose value is what it sends.
var bodyFlags = nameset.Of("-d", "--data", "--data-raw", "--data-binary", "--data-ascii",
	"--data-urlencode", "--json", "-F", "--form", "--form-string", "-T",
	"--upload-file", "--post-data", "--post-file", "--body-data", "--body-file")

// httpieFile is an httpie request item whose value is a file's content.
var httpieFile = lazyregexp.New(`^[^-=:@/][^=:@/]*(?:=|:=)?@.`)

// netSend reads a network program's arguments: the first URL or host is the destination; URLs,
// names and header values are text a send is found in, a literal body is free text, and a body
// from a file or standard input, or a raw connection, sends from elsewhere.
func netSend(cmd *facts.Command) send {
	s := send{via: ViaText}
	name := "" // a host named, the destination when no URL is
	for i := 0; i < len(cmd.Args); i++ {
		a, next := cmd.Args[i], ""
		if i+1 < len(cmd.Args) {
			next = cmd.Args[i+1]
		}
		switch {
		case s.url(a):
		case a == "-H" || a == "--header":
			if _, v, ok := strings.Cut(next, ":"); ok {
				s.encoded = s.encoded || dataLike(strings.TrimSpace(v))
				s.text = append(s.text, v)
			}
			i++
		case bodyFlags.Has(a) || strings.HasPrefix(a, "--") && bodyFlags.Has(strings.SplitN(a, "=", 2)[0]):
			v := next
			if k, val, ok := strings.Cut(a, "="); ok && bodyFlags.Has(k) {
				v = val
			} else {
				i++
			}
			if strings.Contains(v, "@") || v == "-" || a == "-T" || a == "--upload-file" || strings.HasSuffix(strings.SplitN(a, "=", 2)[0], "-file") {
				s.via = ViaElsewhere
			} else if s.via == ViaText {
				s.via = ViaFree
			}
			s.text = append(s.text, v)
		case httpieFile.MatchString(a) && (cmd.Name == "http" || cmd.Name == "https" || cmd.Name == "xh" || cmd.Name == "curlie"):
			s.via = ViaElsewhere // httpie's field=@file, field:=@file, field@file: the file's content
		case !strings.HasPrefix(a, "-") && strings.Contains(a, ".") && !strings.Contains(a, "/"):
			name = cmp.Or(name, "dns:"+a) // a host it looks up or connects to
			s.encoded = s.encoded || dataHost(a)
			s.text = append(s.text, a)
		}
	}
	s.dest = cmp.Or(s.dest, name)
	if facts.IsRawSender(cmd.Name) || cmd.Name == "ssh" || cmd.Name == "scp" || cmd.Name == "sftp" || cmd.Name == "ftp" || cmd.Name == "tftp" || cmd.Name == "telnet" {
		s.dest, s.via = cmp.Or(s.dest, cmd.Name), ViaElsewhere // a connection whose data is not in its arguments
	}
	if s.dest == "" {
		return send{}
	}
	return s
}

// url takes a, when it is a URL, as a place the send reaches and text it carries; the first
// URL's host is the destination.
func (s *send) url(a string) bool {
	if !strings.HasPrefix(a, "http://") && !strings.HasPrefix(a, "https://") {
		return false
	}
	s.dest = cmp.Or(s.dest, hostOfURL(a))
	s.encoded = s.encoded || carriesData(a)
	s.text = append(s.text, a)
	return true
}

// urlSend is what a program that only asks for URLs sends: what they carry.
func urlSend(cmd *facts.Command) send {
	s := send{via: ViaText}
	for _, a := range cmd.Args {
		s.url(a)
	}
	if s.dest == "" {
		return send{}
	}
	return s
}

// storageSend is a copy into a cloud store: its files go, whatever they hold. The store is the
// copy's last operand (aws s3 cp F s3://b/, rclone copy F remote:p, mc cp F alias/b); a copy out
// of a store is a download. An upload that names its store by options (az storage blob upload,
// aws s3api put-object) counts whatever its operands.
func storageSend(cmd *facts.Command) send {
	ops := facts.Operands(cmd.Args)
	verb := slices.IndexFunc(ops, storageVerbs.Has)
	if verb < 0 {
		return send{}
	}
	dest := ""
	if last := ops[len(ops)-1]; verb < len(ops)-1 {
		switch {
		case strings.Contains(last, "://"):
			dest = last // s3://b/k, gs://b, https://acct.blob.core.windows.net/c
		case cmd.Name == "rclone" || cmd.Name == "mc":
			if r, _, ok := strings.Cut(last, ":"); ok && r != "" && !strings.Contains(r, "/") {
				dest = r + ":" // rclone's remote:path
			} else if cmd.Name == "mc" && strings.Contains(last, "/") && !strings.HasPrefix(last, ".") && !strings.HasPrefix(last, "/") && !strings.HasPrefix(last, "~") {
				dest = last // mc's alias/bucket
			}
		}
	}
	if dest == "" && (cmd.Name == "az" && strings.HasPrefix(ops[verb], "upload") || ops[verb] == "put-object" || ops[verb] == "upload-part") {
		dest = cmd.Name + ":" + ops[verb] // the store is named by options
	}
	if dest == "" {
		return send{} // a download, or a copy within the machine
	}
	if u, err := url.Parse(dest); err == nil && u.Scheme != "" && u.Host != "" {
		dest = u.Scheme + "://" + u.Host
	}
	return send{dest: dest, via: ViaElsewhere}
}

// decrypters print what a password store or an encrypted file holds, by the subcommand or
// option that does. The rules let them run (a task may need one value, and peers allow them);
// for the session's flow what they print is private data read.
var decrypters = lazy.Value[map[string][]string]{Make: func() map[string][]string {
	return map[string][]string{
		"pass": {"show"}, "gopass": {"show", "cat"}, "lpass": {"show"}, "bw": {"get"}, "keepassxc-cli": {"show"},
		"doppler": {"secrets"}, "infisical": {"secrets", "export"}, "chamber": {"read", "export"},
		"ansible-vault": {"view"}, "sops": {"-d", "--decrypt"}, "age": {"-d", "--decrypt"},
		"gpg": {"-d", "--decrypt"}, "gpg2": {"-d", "--decrypt"}, "rage": {"-d", "--decrypt"},
	}
}}

// decrypts reports a command that prints a store's or an encrypted file's content.
func decrypts(cmd *facts.Command) bool {
	words, ok := decrypters.Get()[cmd.Name]
	return ok && slices.ContainsFunc(cmd.Args, func(a string) bool { return slices.Contains(words, a) })
}

// shellFacets reads a shell command's items: a downloader's URL (content taken in), what each
// command can send and where, a secret opened or a credential printed (private data read).
func shellFacets(items []item) Facets {
	var f Facets
	var text []string
	merge := func(s send) {
		if s.dest == "" {
			return
		}
		f.Send = cmp.Or(f.Send, s.dest)
		f.Encoded = f.Encoded || s.encoded
		f.Via = strongerVia(f.Via, s.via)
		text = append(text, s.text...)
	}
	for _, it := range items {
		if it.target == TargetBash && it.cmd != nil {
			merge(sendOf(it.cmd))
			if f.Private == "" && decrypts(it.cmd) {
				f.Private = "decrypted by=" + it.cmd.Name
			}
		}
		switch {
		case it.target == TargetBash && it.cmd != nil && downloaders.Has(it.cmd.Name) && f.Untrusted == "":
			for _, a := range it.cmd.Args {
				if strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://") {
					f.Untrusted = "download:" + hostOfURL(a) // what it fetches, the session takes in
					break
				}
			}
		case it.target != TargetEffect:
		case strings.HasPrefix(it.text, "send "):
			merge(sendEffect(it.text))
		case strings.HasPrefix(it.text, "credential"):
			f.Private = it.text
		case strings.HasPrefix(it.text, "open ") && strings.Contains(it.text, " secret"):
			f.Private = it.text
		}
	}
	if f.Send != "" {
		f.Text = strings.Join(text, "\n")
		f.Text = f.Text[:min(len(f.Text), maxFlowText)]
	}
	return f
}

// sendEffect reads a send effect ("send data=<what> ... to=<where>"): data from a file or
// standard input comes from elsewhere; a literal value is free text.
func sendEffect(text string) send {
	s := send{via: ViaElsewhere}
	switch data := effectAttr(text, "data"); {
	case strings.HasPrefix(data, "url:"):
		s.via = ViaText // found in the URL, which the command's own facets hold
	case data != "" && data != "stdin" && !strings.HasPrefix(data, "stdin:") && !strings.HasPrefix(data, "file:"):
		s.via, s.text = ViaFree, []string{data}
	}
	if to := effectAttr(text, "to"); to != "" {
		s.dest = hostOfURL(to)
	}
	return s
}

// effectAttr is the value of an effect's key=value attribute, a quoted one unquoted.
func effectAttr(text, key string) string {
	i := strings.Index(text, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := text[i+len(key)+2:]
	if strings.HasPrefix(v, `"`) {
		v, _, _ = strings.Cut(v[1:], `"`)
		return v
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}

// strongerVia is the way of the two that may carry more: elsewhere over free over text.
func strongerVia(a, b string) string {
	order := map[string]int{"": 0, ViaText: 1, ViaFree: 2, ViaElsewhere: 3}
	if order[b] > order[a] {
		return b
	}
	return a
}

// trusted reports whether a source or destination ("web:host", "mcp:server", a host) is one the
// policy trusts.
func (c *Classifier) trusted(what string) bool {
	if what == "" {
		return false
	}
	name := strings.TrimPrefix(strings.TrimPrefix(what, "web:"), "dns:")
	for _, t := range c.policy.TrustedSources {
		if strings.EqualFold(t, name) || strings.EqualFold(t, what) || strings.HasSuffix(strings.ToLower(name), "."+strings.ToLower(t)) {
			return true
		}
	}
	return false
}

// JudgeFlow matches a flow line (see TargetFlow) against the flow rules.
func (c *Classifier) JudgeFlow(line string) (Verdict, bool) {
	if c.denyAll != "" || line == "" {
		return Verdict{}, false
	}
	return c.match(item{target: TargetFlow, text: line})
}

// WithFlow judges a call by its session's flow st as well as by itself (v): for a call that sends,
// the flow rules on the line st makes; the stricter verdict stands. flowed names the calls of a
// flow a rule found (the untrusted content taken in, the private data read, this send), for the
// record; the reason names them too.
func (c *Classifier) WithFlow(v Verdict, st flow.State, f Facets, call, tool string) (_ Verdict, flowed []string) {
	fv, ok := c.JudgeFlow(st.Line(f.Send, Carried(st, f)))
	if !ok {
		return v, nil
	}
	flowed = st.Evidence(call, tool, f.Send)
	fv.Reason += ": " + strings.Join(flowed, "; ")
	if rank(fv) > rank(v) {
		return fv, flowed
	}
	return v, flowed
}

// Carried says what a send f may carry out of the session st, for its flow line: "read" when
// its text holds data the session read (see flow.State.Carries); "unknown" when its data comes
// from elsewhere, or is free text while the session's private read is not yet seen; "encoded"
// when its text holds an encoded-looking token while that read is not yet seen; "none" when
// what the session read is known and the call carries none of it. "" for a call that sends
// nothing.
func Carried(st flow.State, f Facets) string {
	switch {
	case f.Send == "":
		return ""
	case st.Private != nil && st.Carries(f.Text):
		return "read"
	case f.Via == ViaElsewhere:
		return "unknown"
	case st.Knows():
		return "none"
	case f.Via == ViaFree:
		return "unknown"
	case f.Encoded:
		return "encoded"
	}
	return "none"
}

// rank orders verdicts by strictness: an applied deny over an ask over an allow, and anything
// applied over the same only observed.
func rank(v Verdict) int {
	r := map[claudehook.Decision]int{claudehook.Allow: 0, claudehook.Ask: 2, claudehook.Deny: 4}[v.Decision]
	if v.ObserveOnly && r > 0 {
		r--
	}
	return r
}

// argsCarryData reports a call's arguments holding a token that looks like encoded data (see
// dataLike). It scans the arguments' JSON as it is, without decoding it: a run of the
// characters encoded data is made of, between any others (quotes, spaces, punctuation).
func argsCarryData(input json.RawMessage) bool {
	start := -1
	for i := 0; i <= len(input); i++ {
		if i < len(input) && dataChar(input[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 16 && dataLike(string(input[start:i])) {
			return true
		}
		start = -1
	}
	return false
}

// dataChar is a character of base64, hex or percent-encoding.
func dataChar(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '+' || b == '=' || b == '%' || b == '_'
}
