package classifier

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mvdan.cc/sh/v3/syntax"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/spelling"
)

//go:embed rules/*.rules
var defaultRules embed.FS

// Policy is an admin's adjustment of the defaults (managed.json's policy object).
type Policy struct {
	// RuleFiles are extra rule files, matched after the defaults; each name ends in
	// <target>.rules (bash, edit, read, content, mcp).
	RuleFiles          []RuleFile
	DisabledRules      []string
	RuleModes          map[string]string // rule id -> "observe" | "enforce"
	AllowedExecutables []string
	AllowedMCPServers  []string
	RestrictMCPServers bool
	// Places is the map of the machine the file rules protect by owner (see Place).
	Places []Place
	// DenyAll, when set, is the reason every call is denied for (rule RuleDenyAll): the policy that
	// was meant to be enforced cannot be known, so nothing can be let through.
	DenyAll string
}

// RuleDenyAll is the rule of a verdict under Policy.DenyAll.
const RuleDenyAll = "coworkbridge.config-invalid"

// RuleFile is one rule file's name and content.
type RuleFile struct {
	Name string
	Data []byte
}

// LoadRuleDirs reads every *.rules file of the given folders, in name order.
func LoadRuleDirs(dirs []string) ([]RuleFile, error) {
	var out []RuleFile
	var errs []error
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a folder")
			}
			// A folder of admin rules that is not there would quietly weaken the policy.
			errs = append(errs, fmt.Errorf("policy.rules_dirs: %s: %w; create it, or remove it from the list", d, err))
			continue
		}
		files, err := filepath.Glob(filepath.Join(d, "*.rules"))
		if err != nil {
			errs = append(errs, fmt.Errorf("list rules in %s: %w", d, err))
			continue
		}
		slices.Sort(files)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				errs = append(errs, fmt.Errorf("read rules: %w", err))
				continue
			}
			out = append(out, RuleFile{Name: f, Data: data})
		}
	}
	return out, errors.Join(errs...)
}

// RuleTimeout is the verdict's rule when the caller's deadline ran out during evaluation.
const RuleTimeout = "classifier.timeout"

// Verdict is the classifier's answer for one tool call.
type Verdict struct {
	Decision claudehook.Decision
	RuleID   string
	Reason   string
	Nudge    string
	// Matched is the part of the input that matched: a command, a path, a line.
	Matched string
	// ObserveOnly: the rule is in observe mode, so the verdict is reported, not applied.
	ObserveOnly bool
}

// HookReason is the reason Claude Code shows for a deny or an ask: who decided, why, which rule.
func (v Verdict) HookReason() string {
	r := strings.TrimPrefix(v.Reason, "coworkbridge ")
	if v.RuleID != "" && !strings.Contains(r, v.RuleID) {
		r += " (rule " + v.RuleID + ")"
	}
	return "coworkbridge: " + r
}

// Classifier evaluates tool calls against a compiled policy. It is safe for concurrent use.
type Classifier struct {
	rules    map[Target][]*Rule
	modes    map[string]string
	allowed  map[string]bool
	mcpAllow map[string]bool
	mcpOn    bool
	denyAll  string
	// all is every rule of the policy, those switched off included, and policy what compiled
	// them: kept for Catalog and Fingerprint, which only admins' commands ask for.
	all    []*Rule
	policy Policy
	files  []RuleFile
	// parsers are shell parsers kept between calls: a parser's buffers are the largest single
	// allocation of an analysis, and fewer allocations is a shorter tail of latencies.
	parsers sync.Pool
	places  []place
}

// New compiles the embedded default rules and the policy's additions.
func New(p Policy) (*Classifier, error) {
	if p.DenyAll != "" {
		return &Classifier{denyAll: p.DenyAll}, nil
	}
	c := &Classifier{rules: map[Target][]*Rule{}, modes: p.RuleModes, allowed: map[string]bool{}, mcpOn: p.RestrictMCPServers, mcpAllow: map[string]bool{},
		places: compilePlaces(p.Places)}
	for _, e := range defaultExecutables {
		c.allowed[e] = true
	}
	for _, e := range p.AllowedExecutables {
		c.allowed[strings.ToLower(e)] = true
	}
	for _, s := range p.AllowedMCPServers {
		c.mcpAllow[s] = true
	}
	files, _ := defaultRules.ReadDir("rules")
	var all []RuleFile
	for _, f := range files {
		data, _ := defaultRules.ReadFile("rules/" + f.Name())
		all = append(all, RuleFile{Name: "default/" + f.Name(), Data: data})
	}
	all = append(all, p.RuleFiles...)
	c.policy, c.files = p, all
	disabled := map[string]bool{}
	for _, id := range p.DisabledRules {
		disabled[id] = true
	}
	known := map[string]bool{}
	// Every problem, not the first: an admin fixes a policy in one round.
	var errs []error
	for i, f := range all {
		base := path.Base(filepath.ToSlash(f.Name))
		target := Target(strings.TrimSuffix(base[strings.LastIndex(base, "-")+1:], ".rules"))
		if !validTarget(target) {
			errs = append(errs, fmt.Errorf("rule file %s: name must end in bash.rules, edit.rules, read.rules, content.rules, mcp.rules, effect.rules or url.rules", f.Name))
			continue
		}
		embedded := i < len(files) // checked by the tests: compiled as calls need them
		rules, err := parseRules(ruleParser{file: f.Name, target: target, validators: validatorNames(),
			lists: map[string]bool{"allowed_executables": true}, lazy: embedded}, strings.NewReader(string(f.Data)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.all = append(c.all, rules...)
		for _, r := range rules {
			known[r.ID] = true
			if !disabled[r.ID] {
				c.rules[target] = append(c.rules[target], r)
			}
		}
	}
	ids := slices.Sorted(maps.Keys(known))
	unknown := func(field, id string) error {
		if near, ok := spelling.Suggest(id, ids); ok {
			return fmt.Errorf("%s names rule %q, which no rule file defines; did you mean %q?", field, id, near)
		}
		return fmt.Errorf("%s names rule %q, which no rule file defines", field, id)
	}
	for _, id := range slices.Sorted(maps.Keys(p.RuleModes)) {
		if !known[id] {
			errs = append(errs, unknown("policy.rule_modes", id))
		}
	}
	for _, id := range p.DisabledRules {
		if !known[id] {
			errs = append(errs, unknown("policy.disabled_rules", id))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func validTarget(t Target) bool {
	switch t {
	case TargetBash, TargetEdit, TargetRead, TargetContent, TargetMCP, TargetEffect, TargetURL:
		return true
	}
	return false
}

// Rules lists the compiled rules of a target, for documentation and tests.
func (c *Classifier) Rules(t Target) []*Rule { return c.rules[t] }

// item is one thing a rule is matched against.
type item struct {
	target  Target
	text    string
	cmd     *Command // for bash validators
	an      *Analysis
	cwd     string
	server  string   // for mcp
	content string   // for edit items: the text being written, when known
	tool    string   // the call's tool, for nudges
	args    any      // for mcp: the arguments, decoded
	project []string // the folders the session works in (projectOf), none outside a project
	own     string   // the calling session's folder (canonPath), "" for none
	// secretOnly asks whether a path holds secrets: who owns it (Policy.Places) is not asked.
	secretOnly bool
}

// Evaluate judges one tool call from no session of Cowork's (EvaluateFrom). It never fails:
// what it cannot understand it asks about.
func (c *Classifier) Evaluate(ctx context.Context, p claudehook.Payload) Verdict {
	return c.evaluate(ctx, p, "")
}

func (c *Classifier) evaluate(ctx context.Context, p claudehook.Payload, own string) Verdict {
	if c.denyAll != "" {
		return Verdict{Decision: claudehook.Deny, RuleID: RuleDenyAll, Reason: c.denyAll}
	}
	items, v := c.items(p)
	if v.Decision != "" {
		return v
	}
	best := Verdict{Decision: claudehook.Allow}
	project := projectOf(p.Cwd)
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return Verdict{Decision: claudehook.Deny, RuleID: RuleTimeout, Reason: "the call took too long to check, so it was blocked"}
			}
			return Verdict{Decision: claudehook.Deny, RuleID: "classifier.cancelled", Reason: "the classifier was stopped before it decided"}
		}
		it.tool = p.ToolName
		if it.cwd == "" {
			it.cwd = p.Cwd
		}
		it.project, it.own = project, own
		if v, ok := c.match(it); ok && severity(v) > severity(best) {
			best = v
			if v.Decision == claudehook.Deny && !v.ObserveOnly {
				break
			}
		}
	}
	return best
}

func severity(v Verdict) int {
	s := map[claudehook.Decision]int{claudehook.Allow: 0, claudehook.Ask: 2, claudehook.Deny: 4}[v.Decision]
	if v.ObserveOnly && s > 0 {
		s-- // an enforced ask outranks an observed deny
	}
	return s
}

// match finds the rule that judges an item: the first in file order, unless a later one is
// stricter (an admin's block after a default ask, an enforced rule after one in observe).
func (c *Classifier) match(it item) (Verdict, bool) {
	var best Verdict
	found := false
	for _, r := range c.rules[it.target] {
		if found && r.Action == Suspicious {
			continue // cannot be stricter than what was found
		}
		matched, ok := c.ruleMatches(r, it)
		if !ok {
			continue
		}
		d := claudehook.Deny
		if r.Action == Suspicious {
			d = claudehook.Ask
		}
		v := Verdict{
			Decision: d, RuleID: r.ID, Matched: matched,
			Reason:      fmt.Sprintf("coworkbridge rule %s: %s", r.ID, describeMatch(it, matched)),
			Nudge:       expandNudge(r.Nudge, it),
			ObserveOnly: c.modes[r.ID] == "observe",
		}
		if !found || severity(v) > severity(best) {
			best, found = v, true
		}
		if best.Decision == claudehook.Deny && !best.ObserveOnly {
			break
		}
	}
	return best, found
}

func describeMatch(it item, matched string) string {
	if len(matched) > 200 {
		matched = matched[:200] + "…"
	}
	switch it.target {
	case TargetEdit:
		return "writing " + matched + " is not allowed"
	case TargetRead:
		return "reading " + matched + " is not allowed"
	case TargetContent:
		return "the content contains " + fmt.Sprintf("%q", matched)
	case TargetMCP:
		return "MCP call " + matched
	case TargetEffect:
		return "the command would " + matched
	case TargetURL:
		return "the URL " + matched
	}
	return "command " + fmt.Sprintf("%q", matched)
}

func (c *Classifier) ruleMatches(r *Rule, it item) (string, bool) {
	var matched string
	switch {
	case r.NotInList != "":
		if it.cmd == nil || it.cmd.Name == "" || it.cmd.Function || c.allowed[it.cmd.Name] {
			return "", false
		}
		matched = it.cmd.Name
		if r.Validator != "" {
			m, ok := validator(r.Validator)(c, it)
			if !ok {
				return "", false
			}
			matched = m
		}
	case r.Validator != "":
		m, ok := validator(r.Validator)(c, it)
		if !ok {
			return "", false
		}
		matched = m
	default:
		for _, re := range r.Patterns {
			if loc := re.find(it.text); loc != nil {
				matched = it.text
				if it.target == TargetContent {
					matched = it.text[loc[0]:loc[1]]
				}
				break
			}
		}
		if matched == "" {
			return "", false
		}
	}
	for _, re := range r.Unless {
		if re.find(it.text) != nil {
			return "", false
		}
	}
	return matched, true
}

// nudgeVars are the variables a nudge may name; the rule parser refuses any other.
var nudgeVars = map[string]bool{"command": true, "base_command": true, "file_path": true, "tool_name": true, "server_name": true}

var nudgeVar = lazyregexp.New(`\{([a-z_]+)\}`)

func expandNudge(n string, it item) string {
	if n == "" {
		return ""
	}
	return nudgeVar().ReplaceAllStringFunc(n, func(v string) string {
		switch v[1 : len(v)-1] {
		case "command", "file_path":
			return it.text
		case "base_command":
			return baseCommand(it)
		case "tool_name":
			return it.tool
		case "server_name":
			return it.server
		}
		return v
	})
}

// baseCommand is the program an item runs: its own for one simple command, the first one's for a
// whole command line.
func baseCommand(it item) string {
	switch {
	case it.cmd != nil:
		return it.cmd.Name
	case it.an != nil && len(it.an.Commands) > 0:
		return it.an.Commands[0].Name
	}
	name, _, _ := strings.Cut(strings.TrimSpace(it.text), " ")
	return name
}

// effects lists what the analysed command does, per command and across them.
func (c *Classifier) effects(an *Analysis, cwd string) []Effect {
	var out []Effect
	fl := newFlow(an, cwd, c.secretPath)
	for i := range an.Commands {
		out = append(out, c.programEffects(&an.Commands[i], cwd, fl, an)...)
	}
	return append(out, analysisEffects(an, cwd, fl)...)
}

// programEffects are what one command does: by the tables of what programs do, by the paths it
// is handed, and by the capabilities its arguments use.
func (c *Classifier) programEffects(cmd *Command, cwd string, fl *flow, an *Analysis) []Effect {
	out := append(commandEffects(cmd, cwd, fl), c.openEffects(cmd, cwd)...)
	return append(out, c.capabilityEffects(cmd, cwd, an)...)
}

// analysisEffects are effects of several commands together.
func analysisEffects(an *Analysis, cwd string, fl *flow) []Effect {
	out := append(downloadThenRun(an, cwd), newRemotePush(an)...)
	out = append(out, netRedirects(an, fl)...)
	for _, ce := range an.CodeEffects {
		out = append(out, ce.effect(cwd))
	}
	for _, code := range an.Code {
		for _, sql := range sqlInCode(code.Text) {
			out = append(out, sqlEffects(code.Interp, sql)...)
		}
	}
	return out
}

// secretPath reports whether reading p is denied by a read rule: the policy's own idea of a
// secret (credentials, keys, .env files).
func (c *Classifier) secretPath(p string) bool {
	v, ok := c.match(item{target: TargetRead, text: p, secretOnly: true})
	return ok && v.Decision == claudehook.Deny
}

// Effects lists, for `check`, the effects the classifier sees in a call's shell command.
func (c *Classifier) Effects(p claudehook.Payload) []string {
	if c.denyAll != "" || normalisedTool(p.ToolName) != "Bash" {
		return nil
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(p.ToolInput, &in) != nil {
		return nil
	}
	var out []string
	for _, e := range c.effects(Analyze(in.Command), p.Cwd) {
		out = append(out, e.String())
	}
	return out
}

// normalisedTool maps the names Cowork and old Claude Code builds use to one set.
func normalisedTool(name string) string {
	switch name {
	case "mcp__workspace__bash":
		return "Bash"
	case "mcp__workspace__web_fetch":
		return "WebFetch"
	case "Task":
		return "Agent"
	}
	return name
}

// items turns a payload into the things rules are matched against. A verdict is returned
// directly for input that cannot be understood.
func (c *Classifier) items(p claudehook.Payload) ([]item, Verdict) {
	tool := normalisedTool(p.ToolName)
	var in map[string]json.RawMessage
	if len(p.ToolInput) > 0 && string(p.ToolInput) != "null" {
		if err := json.Unmarshal(p.ToolInput, &in); err != nil {
			return nil, Verdict{Decision: claudehook.Ask, RuleID: "classifier.bad-input", Reason: "the tool input is not a JSON object, so coworkbridge cannot check it"}
		}
	}
	str := func(k string) string {
		var s string
		json.Unmarshal(in[k], &s)
		return s
	}
	switch tool {
	case "Bash":
		return c.bashItems(str("command"), p.Cwd), Verdict{}
	case "Write":
		return c.writeItems(str("file_path"), str("content"), p.Cwd), Verdict{}
	case "Edit":
		return c.writeItems(str("file_path"), str("new_string"), p.Cwd), Verdict{}
	case "NotebookEdit":
		return c.writeItems(str("notebook_path"), str("new_source"), p.Cwd), Verdict{}
	case "MultiEdit":
		var edits []struct {
			NewString string `json:"new_string"`
		}
		json.Unmarshal(in["edits"], &edits)
		items := c.writeItems(str("file_path"), "", p.Cwd)
		for _, e := range edits {
			items = append(items, c.writeItems(str("file_path"), e.NewString, p.Cwd)...)
		}
		return items, Verdict{}
	case "Read":
		return []item{{target: TargetRead, text: canonPath(str("file_path"), p.Cwd)}}, Verdict{}
	case "Glob", "Grep":
		var items []item
		for _, k := range []string{"path", "pattern", "glob"} {
			if v := str(k); v != "" && (k == "path" || strings.Contains(v, "/")) {
				items = append(items, item{target: TargetRead, text: canonPath(v, p.Cwd)})
			}
		}
		if e, ok := c.keySearch(tool, str("pattern"), str("glob"), str("path"), p.Cwd); ok {
			items = append(items, item{target: TargetEffect, text: e.String()})
		}
		return items, Verdict{}
	}
	if server, name, ok := mcpName(p.ToolName); ok {
		return c.mcpItems(server, name, p.ToolInput, p.Cwd), Verdict{}
	}
	if tool == "WebFetch" {
		return urlItems(str("url")), Verdict{}
	}
	return nil, Verdict{}
}

func mcpName(tool string) (server, name string, ok bool) {
	rest, ok := strings.CutPrefix(tool, "mcp__")
	if !ok {
		return "", "", false
	}
	server, name, ok = strings.Cut(rest, "__")
	return server, name, ok
}

func (c *Classifier) writeItems(file, content, cwd string) []item {
	p := canonPath(file, cwd)
	items := []item{{target: TargetEdit, text: p, content: content}}
	if content != "" && instructionFile(p) {
		items = append(items, item{target: TargetContent, text: content})
	}
	return items
}

var instructionPath = lazyregexp.New(`(?i)(^|/)(claude\.md|claude\.local\.md|agents\.md|gemini\.md|\.cursorrules|\.windsurfrules|copilot-instructions\.md)$|(^|/)\.claude/|(^|/)memor(y|ies)/`)

// instructionFile reports whether a path is read by agents as instructions or memory.
func instructionFile(p string) bool { return instructionPath().MatchString(p) }

// readers are commands whose path arguments are files they read.
var readers = map[string]bool{"cat": true, "less": true, "more": true, "head": true, "tail": true, "bat": true, "base64": true,
	"xxd": true, "od": true, "hexdump": true, "strings": true, "grep": true, "egrep": true, "rg": true, "awk": true, "sed": true,
	"cp": true, "scp": true, "rsync": true, "tar": true, "zip": true, "gpg": true, "openssl": true, "source": true, ".": true,
	"nl": true, "tac": true, "sort": true, "uniq": true, "diff": true, "jq": true, "yq": true, "security": true, "sqlite3": true,
	"ln": true, "link": true, "install": true, "ditto": true} // a link to a secret, or a copy, exposes it

// fetchesURLs are programs whose URL arguments are judged by the url rules.
var fetchesURLs = map[string]bool{"curl": true, "wget": true, "http": true, "https": true, "xh": true, "aria2c": true,
	"lwp-request": true, "GET": true, "POST": true, "open": true, "fetch": true}

// writers are commands that write files their arguments name; copiers write only the last.
var writers = map[string]bool{"cp": true, "mv": true, "install": true, "tee": true, "ln": true, "touch": true, "dd": true, "truncate": true, "chmod": true}

var copiers = map[string]bool{"cp": true, "install": true, "ln": true, "rsync": true, "scp": true, "ditto": true}

// readerValueOpts are options of readers whose value is not a file read: sort -o OUT writes it,
// less -p PATTERN searches for it.
var readerValueOpts = map[string]map[string]bool{
	"sort": {"-o": true, "--output": true, "-t": true, "-k": true, "-S": true, "-T": true, "--field-separator": true, "--key": true},
	"less": {"-p": true, "-P": true, "-j": true, "-x": true, "-y": true, "-h": true, "-b": true, "-t": true, "--pattern": true},
	"head": {"-n": true, "-c": true}, "tail": {"-n": true, "-c": true},
}

// fileOperands splits a command's operands into the files it reads and those it writes.
func fileOperands(cmd *Command) (read, written []string) {
	values := readerValueOpts[cmd.Name]
	var ops []string
	for i := 0; i < len(cmd.Args); i++ {
		a := cmd.Args[i]
		if strings.HasPrefix(a, "-") {
			name, value, inline := strings.Cut(a, "=")
			if values[name] {
				if !inline && i+1 < len(cmd.Args) {
					i++
					value = cmd.Args[i]
				}
				if cmd.Name == "sort" && (name == "-o" || name == "--output") {
					written = append(written, value)
				}
			}
			continue
		}
		ops = append(ops, a)
	}
	switch {
	case copiers[cmd.Name] && len(ops) >= 2:
		read = ops[:len(ops)-1]
		if cmd.Name == "cp" && slices.Contains(cmd.Args, "--attributes-only") {
			read = nil // the copy gets the source's mode and times, none of its content
		}
		if dest := ops[len(ops)-1]; !remoteSpec().MatchString(dest) {
			written = append(written, dest) // a remote destination is not a file here
		}
	case cmd.Name == "mv":
		read, written = ops, append(written, ops...) // the sources go, the destination is written
	case writers[cmd.Name]:
		read, written = ops, append(written, ops...)
	default:
		read = ops
	}
	if !writers[cmd.Name] && !copiers[cmd.Name] && cmd.Name != "sort" {
		written = nil
	}
	return read, written
}

func (c *Classifier) bashItems(command, cwd string) []item {
	p, _ := c.parsers.Get().(*syntax.Parser)
	an := analyze(command, p)
	if an.parser != nil {
		c.parsers.Put(an.parser)
		an.parser = nil
	}
	items := []item{{target: TargetBash, text: strings.TrimSpace(command), an: an, cwd: cwd}}
	seen := map[string]bool{}
	for i := range an.Commands {
		cmd := &an.Commands[i]
		line := cmd.Line()
		// The same line fed differently is another command: echo hi | bash; curl … | bash.
		key := line + "\x00" + strings.Join(cmd.Upstream, "|")
		if !seen[key] {
			seen[key] = true
			items = append(items, item{target: TargetBash, text: line, cmd: cmd, an: an, cwd: cwd})
		}
		if fetchesURLs[cmd.Name] {
			for _, a := range cmd.Args {
				// curl http://169.254.169.254/…; not localhost, where a developer's own services
				// (curl localhost:9200/_cat/indices) are ordinary work
				u, ok := urlArg(a)
				switch file, local := fileURL(u); {
				case !ok:
				case local: // curl file:///x reads x: judged by the read rules, as cat x would be
					items = append(items, item{target: TargetRead, text: canonPath(file, cwd)})
				case !loopbackURL(u):
					items = append(items, urlItems(u)...)
				}
			}
		}
		read, written := fileOperands(cmd)
		for _, a := range read {
			if readers[cmd.Name] && (looksLikePath(a) || secretName(a)) {
				items = append(items, item{target: TargetRead, text: canonPath(a, cwd)})
			}
			if cmd.Name == "git" { // git show HEAD:.env, git cat-file -p HEAD:id_rsa
				if _, p, ok := strings.Cut(a, ":"); ok && p != "" && !strings.Contains(a, "://") && !strings.HasPrefix(p, "/") {
					items = append(items, item{target: TargetRead, text: canonPath(p, cwd)})
				}
			}
		}
		for _, a := range written {
			if looksLikePath(a) {
				items = append(items, item{target: TargetEdit, text: canonPath(strings.TrimPrefix(a, "of="), cwd)})
			}
		}
	}
	for target, text := range an.Scripts { // echo '…' >> CLAUDE.md, cat <<EOF > AGENTS.md
		if instructionFile(canonPath(target, cwd)) {
			items = append(items, item{target: TargetContent, text: text})
		}
	}
	fl := newFlow(an, cwd, c.secretPath)
	for i := range an.Commands {
		cmd := &an.Commands[i]
		for _, e := range c.programEffects(cmd, cwd, fl, an) {
			items = append(items, item{target: TargetEffect, text: e.String(), cmd: cmd, an: an, cwd: cwd})
		}
	}
	for _, e := range analysisEffects(an, cwd, fl) {
		items = append(items, item{target: TargetEffect, text: e.String(), an: an, cwd: cwd})
	}
	for _, p := range an.CodePaths {
		items = append(items, item{target: TargetRead, text: canonPath(p, cwd)})
	}
	for _, code := range an.Code {
		items = append(items, item{target: TargetBash, text: code.Interp + " -c " + code.Text, an: an, cwd: cwd})
	}
	for _, w := range an.Writes {
		items = append(items, item{target: TargetEdit, text: canonPath(w, cwd)})
	}
	for _, r := range an.Reads {
		items = append(items, item{target: TargetRead, text: canonPath(r, cwd)})
	}
	return items
}

// secretName: bare file names that hold secrets wherever they are (cat id_rsa).
// secretName reports a bare file name that is a key or credential file: id_rsa (and its kin,
// with _sk), credentials[.ext], env or .env[.suffix]. String tests, not a pattern (see noProject;
// secretNamePattern in the tests is its specification).
func secretName(s string) bool {
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

func looksLikePath(s string) bool {
	return strings.ContainsAny(s, "/~") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "of=")
}

// homeLen is the length of the home folder a path starts with (/root, /home/NAME, /Users/NAME,
// /var/root, $HOME, ${HOME}, ~NAME), or -1. Written out rather than as a pattern: every path of
// every command goes through it, and a pattern's matcher costs an allocation per call.
func homeLen(p string) int {
	for _, h := range []string{"/root", "/var/root", "/private/var/root", "$HOME", "${HOME}"} {
		if strings.HasPrefix(p, h) && (len(p) == len(h) || p[len(h)] == '/') {
			return len(h)
		}
	}
	for _, h := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(p, h); ok {
			if n := strings.IndexByte(rest, '/'); n != 0 && rest != "" {
				return len(h) + cmp.Or(max(n, 0), len(rest))
			}
		}
	}
	if len(p) > 1 && p[0] == '~' && (p[1] >= 'a' && p[1] <= 'z' || p[1] == '_') {
		n := 2
		for n < len(p) && p[n] != '/' && (p[n] >= 'a' && p[n] <= 'z' || p[n] >= '0' && p[n] <= '9' || strings.IndexByte("_.-", p[n]) >= 0) {
			n++
		}
		if n == len(p) || p[n] == '/' {
			return n
		}
	}
	return -1
}

// canonPath cleans a path, resolves it against cwd, and writes any home folder as ~, so that one
// rule covers the Mac's /Users/ada, the VM's /root or /home/ada, and $HOME.
func canonPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	switch {
	case strings.HasPrefix(p, "~"): // ~, ~/x, ~ada/x
	case strings.HasPrefix(p, "/"), strings.HasPrefix(p, "$"):
	case cwd != "":
		p = cwd + "/" + p
	}
	p = path.Clean(p)
	if n := homeLen(p); n >= 0 {
		p = "~" + p[n:]
	}
	return p
}

// keyMaterial is what a search for keys and tokens looks for: their shapes, not the word
// "password" a policy document contains.
var keyMaterial = lazyregexp.New(`AKIA|ASIA[A-Z0-9]|PRIVATE KEY|BEGIN (RSA|OPENSSH|EC|DSA|PGP)|gh[pousr]_|github_pat|xox[abposr]-|sk-(ant-|proj-)?[A-Za-z0-9]|sk_live|(?i:aws_secret|secret_access_key|api[_-]?key\s*[:=])`)

// keyFileGlob is a file-name pattern aimed at key files.
var keyFileGlob = lazyregexp.New(`(?i)(id_(rsa|dsa|ecdsa|ed25519)|\.pem|\.key|\.p12|\.pfx|\.kdbx|\.env|credentials|\.netrc|\.npmrc|\.pgpass|\.git-credentials)`)

// keyRoot reports a folder a search for key material must not sweep: the home folder, the
// disk, the folders of homes, or a folder named for secrets.
func keyRoot(root string) bool {
	return root == "~" || root == "/" || root == "/Users" || root == "/home" || secretDir().MatchString(root)
}

// keySearch finds a Grep for key material, or a Glob for key files, over the home folder, the
// disk or a folder that holds secrets: the matches are the secrets, read a line at a time.
func (c *Classifier) keySearch(tool, pattern, glob, where, cwd string) (Effect, bool) {
	if where == "" {
		where = cwd
	}
	root := canonPath(where, cwd)
	broad := keyRoot(root) || c.secretPath(root)
	switch {
	case !broad:
		return Effect{}, false
	case tool == "Grep" && keyMaterial().MatchString(pattern):
	case tool == "Glob" && keyFileGlob().MatchString(pattern+" "+glob):
	default:
		return Effect{}, false
	}
	return effect(EffectCredential, tool, "what", "a search for key material in "+root), true
}
