package classifier

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/ruleid"

	"mvdan.cc/sh/v3/syntax"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
	"github.com/coworkbridge/coworkbridge/internal/spelling"
)

// The default rules, one string each: a string embedded is read in place, where embed.FS copies
// a file at every read, and every hook process reads them all.
var (
	//go:embed rules/bash.rules
	bashRules string
	//go:embed rules/content.rules
	contentRules string
	//go:embed rules/edit.rules
	editRules string
	//go:embed rules/effect.rules
	effectRules string
	//go:embed rules/flow.rules
	flowRules string
	//go:embed rules/mcp.rules
	mcpRules string
	//go:embed rules/read.rules
	readRules string
	//go:embed rules/url.rules
	urlRules string
)

// defaultRules are the files of rules/, in name order (a test holds the list to the folder).
var defaultRules = []ruleText{
	{"default/bash.rules", bashRules},
	{"default/content.rules", contentRules},
	{"default/edit.rules", editRules},
	{"default/effect.rules", effectRules},
	{"default/flow.rules", flowRules},
	{"default/mcp.rules", mcpRules},
	{"default/read.rules", readRules},
	{"default/url.rules", urlRules},
}

// ruleText is a rule file as the classifier keeps it.
type ruleText struct{ name, text string }

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
	// AllowedAgents are agent programs (codex, an internal agent's name) the admin lets the
	// session's agent start although they run tools no hook of the session judges.
	AllowedAgents []string
	// TrustedSources are hosts (a domain covers its subdomains) and MCP servers (mcp:<name>)
	// whose content a session's flow does not count as untrusted, and to which a send is not
	// outward (policy.trusted_sources).
	TrustedSources []string
	// Places is the map of the machine the file rules protect by owner (see Place).
	Places []Place
	// DenyAll, when set, is the reason every call is denied for (rule ruleid.ConfigInvalid): the policy that
	// was meant to be enforced cannot be known, so nothing can be let through.
	DenyAll string
}

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
	// Flow is what the call means for its session's flow (see FlowOf); an evaluation fills it.
	Flow Facets
	kept *keptAnalysis // see Effects
}

// HookReason is the reason Claude Code shows for a deny or an ask: who decided, why, which rule.
func (v Verdict) HookReason() string {
	r := strings.TrimPrefix(v.Reason, "coworkbridge ")
	if v.RuleID != "" && !strings.Contains(r, v.RuleID) {
		r += " (rule " + v.RuleID + ")"
	}
	return "coworkbridge: " + r
}

// allowedExecutable reports whether a program is on the policy's list of ordinary executables.
func (c *Classifier) allowedExecutable(name string) bool {
	return c.allowed[name] || defaultExecutables.Has(name)
}

// Classifier evaluates tool calls against a compiled policy. It is safe for concurrent use.
type Classifier struct {
	agents   map[string]bool // AllowedAgents
	rules    map[Target][]*Rule
	modes    map[string]string
	allowed  map[string]bool // beside defaultExecutables
	mcpAllow map[string]bool
	mcpOn    bool
	denyAll  string
	// all is every rule of the policy, those switched off included, and policy what compiled
	// them: kept for Catalog and Fingerprint, which only admins' commands ask for.
	all    []*Rule
	policy Policy
	files  []ruleText
	// parsers are shell parsers kept between calls: a parser's buffers are the largest single
	// allocation of an analysis, and fewer allocations is a shorter tail of latencies.
	parsers sync.Pool
	places  []place
	// globPaths caches, by expression, the places each path rule names (patternPaths), listed
	// the first time a globbed path meets the rule.
	globPaths sync.Map
	// find finds effects with the policy's idea of a secret, made once: a method value made per
	// call is an allocation per call.
	find effects.Finder
}

// New compiles the embedded default rules and the policy's additions.
func New(p Policy) (*Classifier, error) {
	if p.DenyAll != "" {
		c := &Classifier{denyAll: p.DenyAll}
		c.find = effects.Finder{Secret: c.secretPath}
		return c, nil
	}
	c := &Classifier{rules: map[Target][]*Rule{}, modes: p.RuleModes, allowed: map[string]bool{}, mcpOn: p.RestrictMCPServers, mcpAllow: map[string]bool{},
		places: compilePlaces(p.Places)}
	for _, e := range p.AllowedExecutables {
		c.allowed[strings.ToLower(e)] = true
	}
	for _, s := range p.AllowedMCPServers {
		c.mcpAllow[s] = true
	}
	c.agents = map[string]bool{}
	for _, a := range p.AllowedAgents {
		c.agents[strings.ToLower(a)] = true
	}
	all := slices.Clip(defaultRules)
	for _, f := range p.RuleFiles {
		all = append(all, ruleText{f.Name, string(f.Data)})
	}
	c.policy, c.files = p, all
	disabled := map[string]bool{}
	for _, id := range p.DisabledRules {
		disabled[id] = true
	}
	validators, lists, a := validatorNames(), map[string]bool{"allowed_executables": true}, &arena{}
	// Every problem, not the first: an admin fixes a policy in one round.
	var errs []error
	for i, f := range all {
		base := path.Base(filepath.ToSlash(f.name))
		target := Target(strings.TrimSuffix(base[strings.LastIndex(base, "-")+1:], ".rules"))
		if !validTarget(target) {
			errs = append(errs, fmt.Errorf("rule file %s: name must end in bash.rules, edit.rules, read.rules, content.rules, mcp.rules, effect.rules, url.rules or flow.rules", f.name))
			continue
		}
		embedded := i < len(defaultRules) // checked by the tests: compiled as calls need them
		rules, err := parseRules(ruleParser{file: f.name, target: target, validators: validators, lists: lists, lazy: embedded, arena: a}, f.text)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.all = append(c.all, rules...)
		for _, r := range rules {
			if !disabled[r.ID] {
				c.rules[target] = append(c.rules[target], r)
			}
		}
	}
	// Made only for a policy that names rules: every hook process builds a classifier.
	var known map[string]bool
	if len(p.RuleModes)+len(p.DisabledRules) > 0 {
		known = make(map[string]bool, len(c.all))
		for _, r := range c.all {
			known[r.ID] = true
		}
	}
	// The sorted ids serve only the message of a policy that names an unknown rule.
	unknown := func(field, id string) error {
		if near, ok := spelling.Suggest(id, slices.Sorted(maps.Keys(known))); ok {
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
	c.find = effects.Finder{Secret: c.secretPath}
	return c, nil
}

func validTarget(t Target) bool {
	switch t {
	case TargetBash, TargetEdit, TargetRead, TargetContent, TargetMCP, TargetEffect, TargetURL, TargetFlow:
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
	cmd     *facts.Command // for bash validators
	an      *facts.Analysis
	cwd     string
	server  string   // for mcp
	content string   // for edit items: the text being written, when known
	tool    string   // the call's tool, for nudges
	args    any      // for mcp: the arguments, decoded
	project []string // the folders the session works in (projectOf), none outside a project
	own     string   // the calling session's folder (CanonPath), "" for none
	// secretOnly asks whether a path holds secrets: who owns it (Policy.Places) is not asked.
	secretOnly bool
	// search: the path is where a search starts, which reaches every place below it; namesOnly:
	// the search lists names and reads no file (find -name, Glob), so it reaches no place's
	// content below it.
	search, namesOnly bool
	// inVM and sessionGuarded: see Call.
	inVM, sessionGuarded bool
	// ordinary: an edit item whose content is an ordinary configuration of its kind (see
	// Rule.UnlessOrdinary).
	ordinary bool
	// carrier says what hands the item's command to a shell, when not the call itself: "stored in
	// F, which runs it later", "carried by the X connector's T".
	carrier string
}

// Evaluate judges one tool call from no session of Cowork's (EvaluateFrom). It never fails:
// what it cannot understand it asks about.
func (c *Classifier) Evaluate(ctx context.Context, p claudehook.Payload) Verdict {
	return c.evaluate(ctx, p, "")
}

func (c *Classifier) evaluate(ctx context.Context, p claudehook.Payload, own string) Verdict {
	return c.evaluateIn(ctx, p, own, machine{})
}

// machine is what a call's door read on the machine for it (see Call).
type machine struct {
	files          map[string]string
	read           func(string) (string, error)
	inVM           bool
	sessionGuarded bool
	where          func(string) (string, bool)
}

func (c *Classifier) evaluateIn(ctx context.Context, p claudehook.Payload, own string, m machine) Verdict {
	if c.denyAll != "" {
		return Verdict{Decision: claudehook.Deny, RuleID: ruleid.ConfigInvalid, Reason: c.denyAll}
	}
	items, v := c.items(p, m)
	if v.Decision != "" {
		return v
	}
	// A shell's paths follow the machine's links (a file tool's are resolved by Call.Resolve);
	// in the VM, where a file tool's path is the VM's, only a second name of a protected file is
	// known, and it is known for every tool.
	if m.where != nil && (normalisedTool(p.ToolName) == "Bash" || m.inVM) {
		items = linkedItems(items, p.Cwd, m.where)
	}
	for i := range items {
		items[i].inVM, items[i].sessionGuarded = m.inVM, m.sessionGuarded
	}
	best := c.judgeItems(ctx, p, own, items)
	best.Flow = c.facetsOf(p, items)
	// The command's own analysis is what Effects would make again, unless files it runs were
	// read into it (Effects judges them by name).
	if best.Decision != claudehook.Allow && normalisedTool(p.ToolName) == "Bash" && len(items) > 0 && items[0].cmd == nil &&
		items[0].an != nil && !readAny(items[0].an) {
		an := items[0].an
		best.kept = &keptAnalysis{an: an, cwd: p.Cwd, find: c.find}
	}
	return best
}

// judgeItems is the strictest verdict of the rules on a call's items.
func (c *Classifier) judgeItems(ctx context.Context, p claudehook.Payload, own string, items []item) Verdict {
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
	switch {
	case it.carrier != "":
		return describeTarget(it, matched) + " (" + it.carrier + ")"
	case it.cmd != nil && it.cmd.From != "":
		return describeTarget(it, matched) + " (in " + it.cmd.From + ", which the command runs)"
	}
	return describeTarget(it, matched)
}

func describeTarget(it item, matched string) string {
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
	case TargetFlow:
		return "this call would " + matched
	}
	return "command " + fmt.Sprintf("%q", matched)
}

func (c *Classifier) ruleMatches(r *Rule, it item) (string, bool) {
	var matched string
	switch {
	case r.NotInList != "":
		if it.cmd == nil || it.cmd.Name == "" || it.cmd.Function || c.allowedExecutable(it.cmd.Name) {
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
			if (it.target == TargetRead || it.target == TargetEdit) && globbed(it.text) {
				if place := globNames(it.text, c.patternPaths(re.src), it.target == TargetRead); place != "" {
					matched = it.text + " (can name " + place + ")"
					break
				}
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
	if r.UnlessOrdinary && it.ordinary {
		return "", false
	}
	return matched, true
}

// nudgeVars are the variables a nudge may name; the rule parser refuses any other.
var nudgeVars = nameset.Of("command", "base_command", "file_path", "tool_name", "server_name")

// nudgeVarAt is the {name} at the start of s, a name of lower-case letters and _, and how many
// bytes it takes; 0 where s does not start with one. Scanned by hand: a hook process that denies
// would otherwise compile an expression to write its one message.
func nudgeVarAt(s string) (name string, n int) {
	if len(s) < 3 || s[0] != '{' {
		return "", 0
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '}' && i > 1:
			return s[1:i], i + 1
		case 'a' <= c && c <= 'z' || c == '_':
		default:
			return "", 0
		}
	}
	return "", 0
}

// eachNudgeVar calls f with each {name} in s, where it starts and ends.
func eachNudgeVar(s string, f func(name string, start, end int)) {
	for i := 0; i < len(s); i++ {
		if name, n := nudgeVarAt(s[i:]); n > 0 {
			f(name, i, i+n)
			i += n - 1
		}
	}
}

func expandNudge(n string, it item) string {
	if !strings.Contains(n, "{") {
		return n
	}
	var b strings.Builder
	last := 0
	eachNudgeVar(n, func(name string, start, end int) {
		b.WriteString(n[last:start])
		b.WriteString(nudgeValue(name, n[start:end], it))
		last = end
	})
	b.WriteString(n[last:])
	return b.String()
}

// nudgeValue is what variable name stands for in a nudge about it; an unknown one stays as
// written (the rule parser refuses them in an admin's file).
func nudgeValue(name, written string, it item) string {
	switch name {
	case "command", "file_path":
		return it.text
	case "base_command":
		return baseCommand(it)
	case "tool_name":
		return it.tool
	case "server_name":
		return it.server
	}
	return written
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
	return effectStrings(c.find, facts.Analyze(in.Command), p.Cwd)
}

func effectStrings(find effects.Finder, an *facts.Analysis, cwd string) []string {
	var out []string
	for _, e := range find.Effects(an, cwd) {
		out = append(out, e.String())
	}
	return out
}

// readAny reports whether an analysed the content of a file the command runs.
func readAny(an *facts.Analysis) bool {
	for _, text := range an.Files {
		if text != "" {
			return true
		}
	}
	return false
}

// keptAnalysis is the analysis of the shell command a verdict judged, kept so that the record of
// a deny does not parse the command again to list its effects.
type keptAnalysis struct {
	an   *facts.Analysis
	cwd  string
	find effects.Finder
}

// Effects are what Classifier.Effects lists for the call v judged, when the evaluation kept the
// command's analysis (a shell command judged as written, other than an allow, that runs no
// file); ok is false otherwise.
func (v Verdict) Effects() (list []string, ok bool) {
	if v.kept == nil {
		return nil, false
	}
	return effectStrings(v.kept.find, v.kept.an, v.kept.cwd), true
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
func (c *Classifier) items(p claudehook.Payload, m machine) ([]item, Verdict) {
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
		return c.bashItems(str("command"), p.Cwd, m), Verdict{}
	case "Write":
		return c.writeItems(str("file_path"), str("content"), p.Cwd, m), Verdict{}
	case "Edit":
		return c.writeItems(str("file_path"), str("new_string"), p.Cwd, m), Verdict{}
	case "NotebookEdit":
		return c.writeItems(str("notebook_path"), str("new_source"), p.Cwd, m), Verdict{}
	case "MultiEdit":
		var edits []struct {
			NewString string `json:"new_string"`
		}
		json.Unmarshal(in["edits"], &edits)
		if len(edits) == 0 {
			return c.writeItems(str("file_path"), "", p.Cwd, m), Verdict{}
		}
		var items []item
		for _, e := range edits { // each edit's own item judges the path
			items = append(items, c.writeItems(str("file_path"), e.NewString, p.Cwd, m)...)
		}
		return items, Verdict{}
	case "Read":
		return []item{{target: TargetRead, text: facts.CanonPath(str("file_path"), p.Cwd)}}, Verdict{}
	case "Glob", "Grep":
		// Where the search starts (its path, or the working folder) reaches all below it; a
		// pattern with a folder in it is judged from there.
		root := facts.CanonPath(cmp.Or(str("path"), "."), p.Cwd)
		items := []item{{target: TargetRead, text: root, search: root != ".", namesOnly: tool == "Glob"}}
		for _, k := range []string{"pattern", "glob"} {
			if v := str(k); strings.Contains(v, "/") {
				items = append(items, item{target: TargetRead, text: facts.CanonPath(v, root), namesOnly: tool == "Glob"})
			}
		}
		if e, ok := c.find.KeySearch(tool, str("pattern"), str("glob"), str("path"), p.Cwd); ok {
			items = append(items, item{target: TargetEffect, text: e.String()})
		}
		return items, Verdict{}
	}
	if server, name, ok := mcpName(p.ToolName); ok {
		return c.mcpItems(server, name, p.ToolInput, p.Cwd, m), Verdict{}
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

func (c *Classifier) writeItems(file, content, cwd string, m machine) []item {
	p := facts.CanonPath(file, cwd)
	stored, ordinary := c.configItems(p, content, cwd, m)
	items := []item{{target: TargetEdit, text: p, content: content, ordinary: ordinary}}
	if content != "" && instructionFile(p) {
		items = append(items, item{target: TargetContent, text: content})
	}
	return append(items, stored...)
}

// writtenItems are the items of a file a command writes (target as the command names it, p
// canonical): the path, and what a configuration file is given when the command's text for it is
// all known (literal) text.
func (c *Classifier) writtenItems(an *facts.Analysis, target, p, cwd string, m machine, literal bool) []item {
	var content string
	if text, ok := an.WrittenText(target); ok && literal {
		content = text
	}
	stored, ordinary := c.configItems(p, content, cwd, m)
	return append([]item{{target: TargetEdit, text: p, content: content, ordinary: ordinary}}, stored...)
}

// configItems judges what a configuration file written with content stores for later
// (facts.ReadConfigFile): its commands as the commands they are, a container spec's grants of
// the host, an agent's rules as instructions. ordinary reports content whose every entry is
// ordinary for its kind, which the path's own rules then let pass (Rule.UnlessOrdinary).
func (c *Classifier) configItems(p, content, cwd string, m machine) (items []item, ordinary bool) {
	if content == "" {
		return nil, false
	}
	cf, ok := facts.ReadConfigFile(p, content)
	if !ok {
		return nil, false
	}
	for _, line := range cf.Commands {
		for _, it := range c.bashItems(line, cwd, m) {
			it.carrier = "stored in " + p + ", which runs it later"
			items = append(items, it)
		}
	}
	for _, e := range effects.SpecEffects(cf.Kind, p, content, cwd) {
		items = append(items, item{target: TargetEffect, text: e.String(), carrier: "in " + p})
	}
	if cf.Kind == facts.ConfigAgentRules {
		items = append(items, item{target: TargetContent, text: content})
	}
	return items, cf.Ordinary()
}

var instructionPath = lazyregexp.New(`(?i)(^|/)(claude\.md|claude\.local\.md|agents\.md|gemini\.md|\.cursorrules|\.windsurfrules|copilot-instructions\.md)$|(^|/)\.claude/|(^|/)memor(y|ies)/`)

// instructionFile reports whether a path is read by agents as instructions or memory.
func instructionFile(p string) bool { return instructionPath.MatchString(p) }

// a link to a secret, or a copy, exposes it

// fileOperands splits a command's operands into the files it reads and those it writes.
func fileOperands(cmd *facts.Command) (read, written []string) {
	values := readerValueOpts.Get()[cmd.Name]
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
	case copiers.Has(cmd.Name) && len(ops) >= 2:
		read = ops[:len(ops)-1]
		if cmd.Name == "cp" && slices.Contains(cmd.Args, "--attributes-only") {
			read = nil // the copy gets the source's mode and times, none of its content
		}
		if dest := ops[len(ops)-1]; !effects.RemoteSpec(dest) {
			written = append(written, dest) // a remote destination is not a file here
		}
	case cmd.Name == "mv":
		read, written = ops, append(written, ops...) // the sources go, the destination is written
	case writers.Has(cmd.Name):
		read, written = ops, append(written, ops...)
	default:
		read = ops
	}
	if !writers.Has(cmd.Name) && !copiers.Has(cmd.Name) && cmd.Name != "sort" {
		written = nil
	}
	return read, written
}

// unpackedInto is the folder an archive is unpacked into, or a repository cloned into, when the
// command names one: tar -x -C DIR, unzip -d DIR, 7z x -oDIR, git clone URL DIR.
func unpackedInto(cmd *facts.Command) string {
	switch cmd.Name {
	case "tar", "gtar", "bsdtar":
		extract := false
		for i, a := range cmd.Args {
			bundle := strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") || i == 0 && !strings.HasPrefix(a, "-")
			if a == "--extract" || a == "--get" || bundle && strings.ContainsRune(a, 'x') {
				extract = true
			}
		}
		if v := facts.OptionValues(cmd.Args, "-C", "--directory", "--cd"); extract && len(v) > 0 {
			return v[len(v)-1]
		}
	case "unzip":
		if v := facts.OptionValues(cmd.Args, "-d"); len(v) > 0 {
			return v[len(v)-1]
		}
	case "7z", "7za", "7zz", "7zr":
		for _, a := range cmd.Args {
			if d, ok := strings.CutPrefix(a, "-o"); ok && d != "" {
				return d
			}
		}
	case "git":
		ops := facts.Operands(cmd.Args)
		if len(ops) >= 3 && ops[0] == "clone" {
			return ops[len(ops)-1]
		}
	}
	return ""
}

func (c *Classifier) bashItems(command, cwd string, m machine) []item {
	p, _ := c.parsers.Get().(*syntax.Parser)
	files := m.files
	if m.read != nil {
		files = map[string]string{} // read below, only when the command runs files
	}
	an := facts.AnalyzeWith(command, p, files)
	if m.read != nil && len(an.ToRead()) > 0 {
		_, an = readRounds(command, cwd, an, an.ReleaseParser(), m.read)
	}
	if p := an.ReleaseParser(); p != nil {
		c.parsers.Put(p)
	}
	items := []item{{target: TargetBash, text: strings.TrimSpace(command), an: an, cwd: cwd}}
	seen := map[string]bool{}
	dir, start := cwd, cwd // the working folder as the command's own cd and pushd move it
	// Searches are judged last: what a command does (an effect, a read) explains a verdict
	// better than where it searches.
	var searches []item
	var visited []string                     // the folders cd moved to: redirections are not tied to their command
	dirs := make([]string, len(an.Commands)) // the working folder each command runs in
	for i := range an.Commands {
		cmd := &an.Commands[i]
		cwd := dir
		dirs[i] = dir
		if next, ok := changedDir(cmd, dir); ok {
			dir = next
			visited = append(visited, next)
		}
		for _, root := range searchRoots(cmd) {
			if r := facts.CanonPath(root, cwd); r != "." && !strings.HasPrefix(r, ".") {
				t := TargetRead
				if cmd.Name == "chmod" || cmd.Name == "chown" || cmd.Name == "chgrp" {
					t = TargetEdit
				}
				searches = append(searches, item{target: t, text: r, search: true, namesOnly: t == TargetRead && listsNames(cmd, an)})
			}
		}
		line := cmd.Line()
		// The same line fed differently is another command: echo hi | bash; curl … | bash.
		key := line + "\x00" + strings.Join(cmd.Upstream, "|")
		if !seen[key] {
			seen[key] = true
			items = append(items, item{target: TargetBash, text: line, cmd: cmd, an: an, cwd: cwd})
		}
		if fetchesURLs.Has(cmd.Name) {
			for _, a := range cmd.Args {
				// curl http://169.254.169.254/…; not localhost, where a developer's own services
				// (curl localhost:9200/_cat/indices) are ordinary work
				u, ok := urlArg(a)
				switch file, local := fileURL(u); {
				case !ok:
				case local: // curl file:///x reads x: judged by the read rules, as cat x would be
					items = append(items, item{target: TargetRead, text: facts.CanonPath(file, cwd)})
				case !loopbackURL(u):
					items = append(items, urlItems(u)...)
				}
			}
		}
		read, written := fileOperands(cmd)
		// After a cd, a bare name is a file in the folder moved to, whatever it looks like.
		moved := cwd != start
		for _, a := range read {
			if effects.IsReader(cmd.Name) && (facts.LooksLikePath(a) || effects.SecretName(a) || moved) {
				items = append(items, item{target: TargetRead, text: facts.CanonPath(a, cwd)})
			}
			if cmd.Name == "git" { // git show HEAD:.env, git cat-file -p HEAD:id_rsa
				if _, p, ok := strings.Cut(a, ":"); ok && p != "" && !strings.Contains(a, "://") && !strings.HasPrefix(p, "/") {
					items = append(items, item{target: TargetRead, text: facts.CanonPath(p, cwd)})
				}
			}
		}
		for _, a := range written {
			if facts.LooksLikePath(a) || moved {
				p := facts.CanonPath(strings.TrimPrefix(a, "of="), cwd)
				items = append(items, c.writtenItems(an, a, p, cwd, m, cmd.Name == "tee")...)
			}
		}
		if dest := unpackedInto(cmd); dest != "" {
			// What lands there is the archive's, unseen: anything in the folder may be written.
			items = append(items, item{target: TargetEdit, text: facts.CanonPath(dest, cwd)})
		}
	}
	for target, text := range an.Scripts { // echo '…' >> CLAUDE.md, cat <<EOF > AGENTS.md
		p := facts.CanonPath(target, cwd)
		if instructionFile(p) {
			items = append(items, item{target: TargetContent, text: text})
		}
		if manifestPath.MatchString(p) { // echo '{"scripts":{"postinstall":…}}' > package.json
			items = append(items, item{target: TargetEdit, text: p, content: text})
		}
	}
	find := c.find
	fl := effects.NewFlow(an, cwd, find.Secret)
	for i := range an.Commands {
		cmd := &an.Commands[i]
		for _, e := range find.ProgramEffects(cmd, dirs[i], fl, an) {
			items = append(items, item{target: TargetEffect, text: e.String(), cmd: cmd, an: an, cwd: dirs[i]})
		}
	}
	for _, e := range effects.AnalysisEffects(an, cwd, fl) {
		items = append(items, item{target: TargetEffect, text: e.String(), an: an, cwd: cwd})
	}
	for _, p := range an.CodePaths {
		items = append(items, item{target: TargetRead, text: facts.CanonPath(p, cwd)})
		if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
			for _, d := range visited { // python3 -c "open('../x')" after a cd
				items = append(items, item{target: TargetRead, text: facts.CanonPath(p, d)})
			}
		}
	}
	for _, code := range an.Code {
		items = append(items, item{target: TargetBash, text: code.Interp + " -c " + code.Text, an: an, cwd: cwd})
	}
	for _, w := range an.Writes {
		items = append(items, c.writtenItems(an, w, facts.CanonPath(w, cwd), cwd, m, true)...)
		for _, d := range visited {
			items = append(items, c.writtenItems(an, w, facts.CanonPath(w, d), d, m, true)...)
		}
	}
	for _, r := range an.Reads {
		items = append(items, item{target: TargetRead, text: facts.CanonPath(r, cwd)})
		for _, d := range visited {
			items = append(items, item{target: TargetRead, text: facts.CanonPath(r, d)})
		}
	}
	return append(items, searches...)
}
