package classifier

import (
	"cmp"
	"encoding/json"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
	"github.com/coworkbridge/coworkbridge/secrets"
)

// Connector calls (MCP tools) are judged on their arguments, not only their names: a path an
// argument names is read (or written) like one a Read or Write names; a URL is judged by where
// it really points; a secret in any string leaves the machine with the call. Servers may be
// named by a UUID (mcp__<uuid>__tool): nothing here depends on the server's name.

// pathKeys are argument names whose value is a file or folder.
var pathKeys = lazyregexp.New(`(?i)^(?:path|paths|file|files|file_?path|file_?name|filename|dir|directory|folder|repo_?path|repository_?path|target|target_?path|` +
	`src|source|source_?path|dest|destination|destination_?path|output|output_?path|input_?path|attachments?|attachment_?paths?|cwd|root|` +
	`workspace|local_?path|notebook_?path|location|from|to|old_?path|new_?path)$`)

// writingTool matches tool names that change what their path arguments name.
var writingTool = lazyregexp.New(`(?i)write|create|save|edit|update|put|upload|move|rename|copy|delete|remove|append|mkdir|patch|replace|insert`)

// contentKeys are argument names whose value is the text a writing tool writes.
var contentKeys = lazyregexp.New(`(?i)^(?:content|contents|text|body|data|new_?string|new_?source|markdown)$`)

// commandRunnerWords, among the words of a server's or tool's name, mark one that runs commands.
var commandRunnerWords = nameset.Of("shell", "terminal", "bash", "sh", "zsh", "cmd", "command", "commands", "exec", "git", "make",
	"npm", "npx", "yarn", "pnpm", "docker", "kubectl", "process", "script", "subprocess", "run", "cli")

// shellSyntax is what only a shell makes something of: substitutions, chaining, pipes.
var shellSyntax = lazyregexp.New("\\$\\(|`|&&|\\|\\||;\\s*[A-Za-z./~$]|\\|\\s*[A-Za-z./~$]|>\\s*[A-Za-z./~]")

// runsCommands reports a server or tool whose name says it runs commands.
func runsCommands(server, tool string) bool { return effects.NameHas(commandRunnerWords, server, tool) }

// shellMetacharacters finds shell syntax in an argument of a tool that runs commands.
func shellMetacharacters(_ *Classifier, it item) (string, bool) {
	if it.target != TargetMCP || it.args == nil || !runsCommands(it.server, it.tool) {
		return "", false
	}
	found := ""
	n := 0
	effects.WalkStrings(it.args, "", 0, &n, func(k, v string) {
		if commandKey(k) {
			return // judged as the shell command it is (carriedCommands)
		}
		if found == "" && shellSyntax.MatchString(v) {
			found = v
		}
	})
	return found, found != ""
}

// commandKey reports an argument whose value a tool runs as a command line.
func commandKey(k string) bool {
	switch strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k)) {
	case "command", "cmd", "shellcommand", "commandline", "bashcommand":
		return true
	}
	return false
}

// carriedCommand is the command line a connector call hands a shell or starts: the value of a
// command argument (command, cmd, command_line), with the words of an args list beside it, and
// the folder it runs in (cwd, working_directory); for a tool whose name says it runs commands, a
// script argument too.
func carriedCommand(server, tool string, args any) (line, dir string, ok bool) {
	obj, _ := args.(map[string]any)
	for k, v := range obj {
		s, isString := v.(string)
		if !isString || strings.TrimSpace(s) == "" {
			continue
		}
		switch lk := strings.ToLower(k); {
		case commandKey(k), (lk == "script" || lk == "code" && strings.Contains(strings.ToLower(tool), "shell")) && runsCommands(server, tool):
			line = s
		case lk == "cwd" || lk == "working_directory" || lk == "workdir" || lk == "working_dir" || lk == "dir":
			dir = s
		}
	}
	if line == "" {
		return "", "", false
	}
	for _, k := range []string{"args", "arguments", "argv"} {
		if list, isList := obj[k].([]any); isList {
			var words []string
			for _, a := range list {
				if s, isString := a.(string); isString {
					words = append(words, s)
				}
			}
			line += " " + facts.QuoteWords(words)
		}
	}
	return line, dir, true
}

// mcpItems are the items of one connector call: the call as text (for mcp rules), each path,
// each URL, text written into an instruction file, and a send of any secret its strings carry.
func (c *Classifier) mcpItems(server, tool string, input json.RawMessage, cwd string, m machine) []item {
	var args any
	json.Unmarshal(input, &args)
	items := []item{{target: TargetMCP, text: server + " " + tool + " " + string(input), server: server, tool: tool, args: args}}
	if args == nil {
		return items
	}
	if line, dir, ok := carriedCommand(server, tool, args); ok {
		for _, it := range c.bashItems(line, facts.CanonPath(cmp.Or(dir, "."), cwd), m) {
			it.carrier = "carried by the " + server + " connector's " + tool
			items = append(items, it)
		}
	}
	writes := writingTool.MatchString(tool)
	var secretKinds []string
	var instruction []string // instruction files a writing tool names
	var written []string     // every file it names
	var content []string
	n := 0
	by := "mcp:" + server + "/" + tool
	effects.WalkStrings(args, "", 0, &n, func(key, v string) {
		if effects.SQLArgument(server, tool, key, v) {
			for _, e := range effects.SQLEffects(by, v) {
				items = append(items, item{target: TargetEffect, text: e.String()})
			}
		}
		if secretKind := firstSecret(v); secretKind != "" {
			secretKinds = append(secretKinds, secretKind)
		}
		if u, ok := urlArg(v); ok {
			items = append(items, urlItems(u)...)
			if file, ok := fileURL(u); ok {
				v, key = file, "path"
			}
		}
		if p, ok := pathArg(key, v); ok {
			cp := facts.CanonPath(p, cwd)
			items = append(items, item{target: TargetRead, text: cp})
			if writes {
				items = append(items, item{target: TargetEdit, text: cp})
				written = append(written, cp)
				if instructionFile(cp) {
					instruction = append(instruction, cp)
				}
			}
		}
		if writes && contentKeys.MatchString(key) {
			content = append(content, v)
		}
	})
	if len(instruction) > 0 {
		for _, text := range content {
			items = append(items, item{target: TargetContent, text: text})
		}
	}
	for _, p := range written { // what a configuration file it writes stores for later
		for _, text := range content {
			stored, _ := c.configItems(p, text, cwd, m)
			items = append(items, stored...)
		}
	}
	if effects.MemoryTool(server, tool) { // what a memory keeps, the agent reads as instructions later
		var kept []string
		m := 0
		effects.WalkStrings(args, "", 0, &m, func(_, v string) { kept = append(kept, v) })
		items = append(items, item{target: TargetContent, text: strings.Join(kept, "\n")})
	}
	for _, e := range effects.ConnectorEffects(by, tool, args) {
		items = append(items, item{target: TargetEffect, text: e.String()})
	}
	if len(secretKinds) > 0 { // any connector call takes its arguments off the machine
		e := effects.New(effects.EffectSend, "mcp", "data", "arguments:"+strings.Join(secretKinds, ","), "secret", "", "to", "mcp:"+server+"/"+tool)
		items = append(items, item{target: TargetEffect, text: e.String()})
	}
	return items
}

func firstSecret(s string) string {
	if f := secrets.Find(s); len(f) > 0 {
		return f[0].Kind
	}
	return ""
}

// pathArg reports whether an argument names a file: by its key, or by its shape when it is one
// word that can only be a path (/x, ~/x, ../x, ./x). A message that merely mentions a path is
// not one.
func pathArg(key, v string) (string, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 4096 || strings.ContainsAny(v, "\n\x00") || strings.Contains(v, "://") {
		return "", false
	}
	if pathKeys.MatchString(key) {
		return v, true
	}
	if strings.ContainsAny(v, " \t") {
		return "", false
	}
	for _, prefix := range []string{"/", "~/", "../", "./", "$HOME/", "${HOME}/"} {
		if strings.HasPrefix(v, prefix) && len(v) > len(prefix) {
			return v, true
		}
	}
	return "", false
}

// urlArg reports a string that is a URL a tool may fetch.
func urlArg(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if len(v) > 8192 || strings.ContainsAny(v, " \n\t") {
		return "", false
	}
	scheme, _, ok := strings.Cut(v, "://")
	if !ok || scheme == "" || len(scheme) > 16 {
		return "", false
	}
	return v, true
}

// fileURL returns the path a file:// URL names.
func fileURL(u string) (string, bool) {
	parsed, err := url.Parse(u)
	if err != nil || !strings.EqualFold(parsed.Scheme, "file") {
		return "", false
	}
	p := parsed.Path
	if p == "" {
		p = parsed.Opaque
	}
	return path.Clean("/" + strings.TrimPrefix(p, "/")), p != ""
}

// urlItems is the item a URL is judged as: scheme://host[:port]/path?query with the host
// normalised, or the raw text when it does not parse (judged as it stands).
func urlItems(u string) []item {
	if u == "" {
		return nil
	}
	items := []item{{target: TargetURL, text: normalURL(u)}}
	if kind := firstSecret(u); kind != "" {
		// A credential in a URL leaves with the request, whatever the method: in the path, the
		// query or the user part, to the host and every proxy and log on the way.
		e := effects.New(effects.EffectSend, "url", "data", "url:"+kind, "secret", "", "to", hostOfURL(u))
		items = append(items, item{target: TargetEffect, text: e.String()})
	}
	return items
}

// hostOfURL is the host a URL names, or the URL itself when it names none.
func hostOfURL(u string) string {
	if p, err := url.Parse(strings.TrimSpace(u)); err == nil && p.Host != "" {
		return p.Host
	}
	return u
}

// normalURL lowercases the scheme and host and writes an IPv4 host however it was spelled
// (2852039166, 0xa9fea9fe, 0251.0376.0251.0376, ::ffff:169.254.169.254) as a dotted quad, so
// that rules about addresses see the address.
func normalURL(raw string) string {
	parsed, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || parsed.Scheme == "" {
		return raw
	}
	host := hostOf(parsed)
	out := strings.ToLower(parsed.Scheme) + "://" + host
	if strings.Contains(host, ":") {
		out = strings.ToLower(parsed.Scheme) + "://[" + host + "]"
	}
	if port := parsed.Port(); port != "" {
		out += ":" + port
	}
	out += parsed.EscapedPath()
	if parsed.RawQuery != "" {
		out += "?" + parsed.RawQuery
	}
	return out
}

// ipv4Host reads a host that is an IPv4 address in any form inet_aton accepts, or mapped into
// IPv6, and returns it dotted.
func ipv4Host(h string) (string, bool) {
	h = strings.TrimPrefix(h, "::ffff:")
	parts := strings.Split(h, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return "", false
	}
	var nums []uint64
	for _, p := range parts {
		n, err := strconv.ParseUint(p, 0, 32) // 0x.., 0.. (octal) and decimal
		if err != nil {
			if len(p) > 1 && p[0] == '0' && strings.Trim(p, "01234567") == "" {
				n, err = strconv.ParseUint(p[1:], 8, 32)
			}
			if err != nil {
				return "", false
			}
		}
		nums = append(nums, n)
	}
	// a.b.c.d; a.b.c (c is 16 bits); a.b (b is 24 bits); a (32 bits)
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	v |= last
	return strconv.Itoa(int(v>>24)) + "." + strconv.Itoa(int(v>>16&255)) + "." + strconv.Itoa(int(v>>8&255)) + "." + strconv.Itoa(int(v&255)), true
}

// hostOf is a URL's host, lowercased, without a trailing dot, an IPv4 address however it was
// spelled written as a dotted quad.
func hostOf(parsed *url.URL) string {
	host := strings.ToLower(strings.TrimSuffix(parsed.Hostname(), "."))
	if ip, ok := ipv4Host(host); ok {
		host = ip
	}
	return host
}

// loopbackURL reports a URL to this machine's own loopback address.
func loopbackURL(u string) bool {
	parsed, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return false
	}
	host := hostOf(parsed)
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1" || host == "0.0.0.0"
}
