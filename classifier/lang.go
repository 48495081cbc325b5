package classifier

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Target is what a rule file's rules are matched against.
type Target string

// Targets, one rule file each.
const (
	TargetBash    Target = "bash"    // each normalised simple command, and the whole command
	TargetEdit    Target = "edit"    // the path a Write, Edit or NotebookEdit changes (and shell redirections)
	TargetRead    Target = "read"    // the path a Read, Glob or Grep reads (and files shell readers open)
	TargetContent Target = "content" // the text being written
	TargetMCP     Target = "mcp"     // "<server> <tool> <arguments JSON>"
	TargetEffect  Target = "effect"  // one line per effect of a shell command (see Effect.String)
	TargetURL     Target = "url"     // a URL a tool call fetches or names, its host normalised (see normalURL)
)

// Action is what a matching rule asks for.
type Action string

// Actions: block denies, suspicious asks the user.
const (
	Block      Action = "block"
	Suspicious Action = "suspicious"
)

// Rule is one parsed rule.
type Rule struct {
	ID     string
	Action Action
	Target Target
	// Exactly one way of matching: patterns (any of them), a list key, or a validator.
	Patterns  []Pattern
	NotInList string // match_base_command_not_in <config key>
	Validator string
	// Unless patterns exempt a match: RE2 has no lookahead, so look-alikes are named here.
	Unless []Pattern
	// UnlessOrdinary exempts a write whose content coworkbridge reads as an ordinary
	// configuration of its kind (facts.ReadConfigFile): an ssh host, a PATH line, a tab width.
	UnlessOrdinary bool
	Nudge          string
	// doc is the comment block written right above the rule, as written: see Doc.
	doc  string
	File string
	Line int
}

// A Pattern is one of a rule's regular expressions. The embedded default rules' patterns are
// compiled when a call first needs them (a test compiles them all): the host hook is a process per
// tool call, and compiling all of them would be most of its work. Patterns read from an admin's
// file are compiled as the file is read, so that a mistake is named at once.
type Pattern struct {
	src string
	c   *compiled
}

// compiled is what a pattern builds from its source when first needed: one allocation per
// pattern, where a pair of sync.OnceValue closures cost eight (every hook process parses the
// defaults' few hundred patterns and uses a handful).
type compiled struct {
	reOnce  sync.Once
	re      *regexp.Regexp // set before the pattern is shared for an admin's file, on first use otherwise
	bad     any            // what compiling the source panicked with
	preOnce sync.Once
	pre     prefilter
	// words are made for a text the prefilter let through, before the expression is compiled.
	wordsOnce sync.Once
	words     wordsNeeded
}

// String is the expression as written.
func (p Pattern) String() string { return p.src }

// Regexp is the compiled expression. An embedded pattern that does not compile panics, at every
// use, as regexp.MustCompile does; the tests compile them all.
func (p Pattern) Regexp() *regexp.Regexp {
	c := p.c
	c.reOnce.Do(func() {
		if c.re != nil {
			return
		}
		defer func() { c.bad = recover() }()
		c.re = regexp.MustCompile(p.src)
	})
	if c.bad != nil {
		panic(c.bad)
	}
	return c.re
}

// prefilter is what every text the expression matches must hold, read from the source on first use.
func (p Pattern) prefilter() *prefilter {
	c := p.c
	c.preOnce.Do(func() { c.pre = newPrefilter(p.src) })
	return &c.pre
}

// wordsNeeded is what the whole expression requires, read from the source on first use.
func (p Pattern) wordsNeeded() *wordsNeeded {
	c := p.c
	c.wordsOnce.Do(func() { c.words = newWordsNeeded(p.src) })
	return &c.words
}

// find is the place of the first match in text, or nil; texts the pattern's prefilter, and then
// the words it needs, rule out are not run through the expression, which is compiled only if one
// is.
func (p Pattern) find(text string) []int {
	if !p.prefilter().mayMatch(text) || !p.wordsNeeded().heldBy(text) {
		return nil
	}
	return p.Regexp().FindStringIndex(text)
}

// ParseError names the file, the line and what was expected.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseRules reads one rule file. validators and lists name what `validator` and
// `match_base_command_not_in` may refer to.
func ParseRules(file string, target Target, r io.Reader, validators map[string]bool, lists map[string]bool) ([]*Rule, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &ParseError{file, 0, err.Error()}
	}
	return parseRules(ruleParser{file: file, target: target, validators: validators, lists: lists}, string(data))
}

// parseRules reads one rule file's text with p set up; p.lazy leaves patterns to be compiled on
// first use, for rules whose syntax the tests have checked (the embedded defaults). The rules
// keep slices of text rather than copies of each line: every hook process parses the defaults.
func parseRules(p ruleParser, text string) ([]*Rule, error) {
	if p.arena == nil {
		p.arena = &arena{}
	}
	p.text, p.docFrom = text, -1
	for line := range strings.Lines(text) {
		p.line++
		raw := strings.TrimSuffix(line, "\n")
		if err := p.parseLine(strings.TrimSuffix(raw, "\r")); err != nil {
			return nil, err
		}
		p.off += len(line)
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	return p.rules, nil
}

type ruleParser struct {
	file       string
	target     Target
	validators map[string]bool
	lists      map[string]bool
	line       int
	rules      []*Rule
	cur        *Rule
	inAny      bool // reading the indented patterns of match_any
	lazy       bool // compile patterns on first use (the embedded defaults)
	ids        map[string]bool
	text       string
	off        int // where the line being read starts in text
	// docFrom and docTo bound the comment lines right above the next rule (docFrom -1: none).
	// The rule keeps them as one slice of text, read into sentences only when asked for.
	docFrom, docTo int
	arena          *arena
}

// arena hands out rules and patterns' states a slab at a time: the files of one policy are read
// together and their rules live as long as it does, and every hook process reads the defaults'
// few hundred rules.
type arena struct {
	rules    slab[Rule]
	compiled slab[compiled]
}

func (a *arena) rule() *Rule        { return a.rules.next() }
func (a *arena) pattern() *compiled { return a.compiled.next() }

// slab hands out values of T 64 at a time.
type slab[T any] []T

func (s *slab[T]) next() *T {
	if len(*s) == 0 {
		*s = make([]T, 64)
	}
	v := &(*s)[0]
	*s = (*s)[1:]
	return v
}

// Doc is the comment written right above the rule, for admins reading it in `rules`: its
// lines that start at the margin, joined.
func (r *Rule) Doc() string {
	var words []string
	for line := range strings.Lines(r.doc) {
		line = strings.TrimRight(line, " \t\r\n")
		if strings.HasPrefix(line, "#") {
			words = append(words, strings.TrimSpace(line[1:]))
		}
	}
	return strings.Join(words, " ")
}

// nudgeVars are the {variables} nudge text s names; the embedded defaults' are held to the
// known ones by the tests, which parse them as an admin's file.
func (p *ruleParser) nudgeVars(s string) []string {
	if p.lazy {
		return nil
	}
	var names []string
	eachNudgeVar(s, func(name string, _, _ int) { names = append(names, name) })
	return names
}

func (p *ruleParser) errorf(format string, args ...any) error {
	return &ParseError{p.file, p.line, fmt.Sprintf(format, args...)}
}

func (p *ruleParser) parseLine(raw string) error {
	text := strings.TrimRight(raw, " \t\r")
	trimmed := strings.TrimLeft(text, " \t")
	if trimmed == "" {
		p.docFrom = -1
		return nil
	}
	if strings.HasPrefix(trimmed, "#") {
		if trimmed == text {
			if p.docFrom < 0 {
				p.docFrom = p.off
			}
			p.docTo = p.off + len(raw)
		}
		return nil
	}
	indent := len(text) - len(trimmed)
	if indent == 0 {
		p.inAny = false
		return p.header(trimmed)
	}
	if p.cur == nil {
		return p.errorf("indented line outside a rule; start a rule with `block \"id\"` or `suspicious \"id\"`")
	}
	keyword, rest, _ := strings.Cut(trimmed, " ")
	if p.inAny && indent >= 4 {
		return p.pattern(&p.cur.Patterns, trimmed)
	}
	p.inAny = false
	switch keyword {
	case "match":
		return p.pattern(&p.cur.Patterns, rest)
	case "match_any":
		if rest != "" {
			return p.errorf("match_any takes no value; put one pattern per line below it, indented further")
		}
		p.inAny = true
		return nil
	case "unless":
		return p.pattern(&p.cur.Unless, rest)
	case "unless_ordinary":
		if rest != "" || p.target != TargetEdit {
			return p.errorf("unless_ordinary takes no value and belongs to edit rules")
		}
		p.cur.UnlessOrdinary = true
		return nil
	case "match_base_command_not_in":
		if !p.lists[rest] {
			return p.errorf("unknown list %q for match_base_command_not_in; known: %s", rest, keys(p.lists))
		}
		p.cur.NotInList = rest
		return nil
	case "validator":
		if !p.validators[rest] {
			return p.errorf("unknown validator %q; known: %s", rest, keys(p.validators))
		}
		p.cur.Validator = rest
		return nil
	case "nudge":
		s, err := strconv.Unquote(rest)
		if err != nil {
			return p.errorf("nudge wants one double-quoted string, got %s", rest)
		}
		for _, name := range p.nudgeVars(s) {
			if !nudgeVars.Has(name) {
				return p.errorf("nudge names {%s}, which is not a variable; known: %s", name, strings.Join(slices.Sorted(slices.Values(nudgeVars.Names())), ", "))
			}
		}
		p.cur.Nudge = s
		return nil
	}
	return p.errorf("unknown keyword %q; expected match, match_any, unless, unless_ordinary, match_base_command_not_in, validator or nudge", keyword)
}

func (p *ruleParser) header(line string) error {
	if err := p.finish(); err != nil {
		return err
	}
	kw, rest, _ := strings.Cut(line, " ")
	if kw != string(Block) && kw != string(Suspicious) {
		return p.errorf("expected `block \"id\"` or `suspicious \"id\"`, got %q", line)
	}
	rest = strings.TrimSpace(rest)
	quoted, err := strconv.QuotedPrefix(rest)
	var id string
	if err == nil {
		id, err = strconv.Unquote(quoted)
		if after := strings.TrimSpace(rest[len(quoted):]); after != "" && !strings.HasPrefix(after, "#") {
			return p.errorf("unexpected %q after the rule id", after)
		}
	}
	if err != nil || !validRuleID(id) {
		return p.errorf("rule id must be a double-quoted lower-case id like \"bash.rm-root\", got %s", rest)
	}
	// The embedded defaults are held to this by the tests, which parse them as an admin's file.
	if !p.lazy {
		if p.ids == nil {
			p.ids = map[string]bool{}
		}
		if p.ids[id] {
			return p.errorf("rule id %q is used twice in this file", id)
		}
		p.ids[id] = true
	}
	p.cur = p.arena.rule()
	*p.cur = Rule{ID: id, Action: Action(kw), Target: p.target, File: p.file, Line: p.line}
	if p.docFrom >= 0 {
		p.cur.doc = p.text[p.docFrom:p.docTo]
		p.docFrom = -1
	}
	return nil
}

// validRuleID: 1 to 128 of [a-z0-9._-], starting with a letter or digit. Written out, not as an
// expression: the bounded repetition costs a quarter of a millisecond to compile, in every hook
// process, for a check of a few bytes.
func validRuleID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func (p *ruleParser) pattern(dst *[]Pattern, expr string) error {
	if expr == "" {
		return p.errorf("empty pattern")
	}
	// A pattern runs to the end of its line, so "foo  # why" would silently match the comment too.
	if i := strings.Index(expr, "#"); i > 0 && (expr[i-1] == ' ' || expr[i-1] == '\t') {
		return p.errorf("a comment cannot follow a pattern on its line (it would become part of the pattern); put it on a line of its own, or write a literal '#' as \\x23")
	}
	c := p.arena.pattern()
	if !p.lazy {
		re, err := regexp.Compile(expr)
		if err != nil {
			return p.errorf("bad regular expression: %v", err)
		}
		c.re = re
	}
	*dst = append(*dst, Pattern{expr, c})
	return nil
}

func (p *ruleParser) finish() error {
	r := p.cur
	if r == nil {
		return nil
	}
	ways := 0
	for _, set := range []bool{len(r.Patterns) > 0, r.NotInList != "", r.Validator != ""} {
		if set {
			ways++
		}
	}
	// match_base_command_not_in may be narrowed by a validator: both must hold.
	if r.NotInList != "" && r.Validator != "" && len(r.Patterns) == 0 {
		ways = 1
	}
	if ways != 1 {
		return &ParseError{p.file, r.Line, fmt.Sprintf("rule %q needs exactly one of match, match_any, match_base_command_not_in or validator (a validator may narrow match_base_command_not_in)", r.ID)}
	}
	p.rules = append(p.rules, r)
	p.cur = nil
	return nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
