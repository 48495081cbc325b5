package facts

import (
	"encoding/json"
	"strings"
)

// Bounds on what a Makefile or a package.json yields: a hostile file gets no more work than
// these, whatever it holds.
const (
	maxMakeLines   = 4096 // logical lines read
	maxMakeRules   = 512  // rules visited from the targets asked for
	maxRecipeLines = 1024 // recipe lines returned
	maxMakeExpand  = 16   // nested variable references followed
)

// makefile is what MakeRecipes reads of a Makefile: its variables, its rules in order, and the
// text of every $(shell …), which make runs while it reads the file.
type makefile struct {
	vars  map[string]string
	rules []makeRule
	shell []string
}

type makeRule struct {
	targets, prereqs []string
	recipe           []string
}

// MakeRecipes is what make runs for targets ("" is the default goal): the recipe lines of each
// and of what each needs, with the Makefile's variables expanded, their @, - and + prefixes
// taken off, plus every $(shell …) the file holds. Conditionals are read on both branches and
// included files are not read: the lines cover at least what make would run from this file.
func MakeRecipes(text string, targets []string) []string {
	mf := parseMakefile(text)
	out := append([]string(nil), mf.shell...)
	seen := map[string]bool{}
	queue := append([]string(nil), targets...)
	for visited := 0; len(queue) > 0 && visited < maxMakeRules && len(out) < maxRecipeLines; visited++ {
		t := queue[0]
		queue = queue[1:]
		if t == "" {
			t = mf.defaultGoal()
		}
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		for _, r := range mf.rulesFor(t) {
			auto := map[string]string{"@": t, "<": first(r.prereqs), "^": strings.Join(r.prereqs, " "), "+": strings.Join(r.prereqs, " ")}
			for _, line := range r.recipe {
				if len(out) >= maxRecipeLines {
					break
				}
				line = strings.TrimLeft(mf.expand(line, auto, 0), "@-+ \t")
				if strings.TrimSpace(line) != "" {
					out = append(out, line)
				}
			}
			queue = append(queue, r.prereqs...)
		}
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// makeLines joins make's continued lines (a backslash before the newline) and drops comments
// outside recipes, keeping at most maxMakeLines.
func makeLines(text string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(strings.TrimPrefix(text, "\ufeff")) {
		if len(out) >= maxMakeLines {
			break
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(line)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func parseMakefile(text string) *makefile {
	mf := &makefile{vars: map[string]string{}}
	var rule *makeRule
	inDefine := ""
	var defined strings.Builder
	for _, line := range makeLines(text) {
		if inDefine != "" {
			if strings.TrimSpace(line) == "endef" {
				mf.vars[inDefine] = defined.String()
				inDefine = ""
				continue
			}
			defined.WriteString(line + "\n")
			continue
		}
		if strings.HasPrefix(line, "\t") && rule != nil {
			rule.recipe = append(rule.recipe, line[1:])
			continue
		}
		mf.shell = append(mf.shell, shellFunctions(line)...)
		stmt := strings.TrimSpace(stripMakeComment(line))
		for _, kw := range []string{"override ", "export ", "private "} {
			stmt = strings.TrimPrefix(stmt, kw)
		}
		switch {
		case stmt == "":
			continue
		case strings.HasPrefix(stmt, "define "):
			inDefine = strings.Fields(strings.TrimPrefix(stmt, "define "))[0]
			defined.Reset()
			continue
		case makeDirective(stmt):
			continue
		}
		if name, value, ok := makeAssignment(stmt); ok {
			mf.vars[name] = value
			continue
		}
		targets, rest, ok := strings.Cut(stmt, ":")
		if !ok {
			rule = nil
			continue
		}
		rest = strings.TrimPrefix(rest, ":") // a double-colon rule
		prereqs, inline, _ := strings.Cut(rest, ";")
		prereqs, _, _ = strings.Cut(prereqs, "|") // order-only prerequisites are still made
		mf.rules = append(mf.rules, makeRule{targets: strings.Fields(mf.expand(targets, nil, 0)),
			prereqs: strings.Fields(mf.expand(prereqs, nil, 0))})
		rule = &mf.rules[len(mf.rules)-1]
		if strings.TrimSpace(inline) != "" {
			rule.recipe = append(rule.recipe, inline)
		}
	}
	return mf
}

// stripMakeComment cuts a line at its first # not escaped.
func stripMakeComment(line string) string {
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if line[i] == '#' {
			return line[:i]
		}
	}
	return line
}

// makeDirective reports a line that is one of make's directives rather than a rule.
func makeDirective(stmt string) bool {
	word, _, _ := strings.Cut(stmt, " ")
	switch word {
	case "ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "include", "-include", "sinclude", "vpath", "unexport", "undefine", "endef":
		return true
	}
	return false
}

// makeAssignment reads NAME = value and its kin (:=, ::=, ?=, +=, !=).
func makeAssignment(stmt string) (name, value string, ok bool) {
	i := strings.IndexByte(stmt, '=')
	if i <= 0 {
		return "", "", false
	}
	name = stmt[:i]
	if c := strings.IndexByte(name, ':'); c >= 0 && !strings.HasSuffix(name, ":") && !strings.HasSuffix(name, "::") {
		return "", "", false // a rule whose prerequisites hold an =
	}
	name = strings.TrimRight(name, ":?+! \t")
	if name == "" || strings.ContainsAny(name, " \t") {
		return "", "", false
	}
	return name, strings.TrimSpace(stmt[i+1:]), true
}

// defaultGoal is the first target that is not special (.PHONY) and not a pattern.
func (mf *makefile) defaultGoal() string {
	for _, r := range mf.rules {
		for _, t := range r.targets {
			if !strings.HasPrefix(t, ".") && !strings.Contains(t, "%") {
				return t
			}
		}
	}
	return ""
}

// rulesFor are the rules that make t: those naming it, else the pattern rules it matches.
func (mf *makefile) rulesFor(t string) []makeRule {
	var exact, pattern []makeRule
	for _, r := range mf.rules {
		for _, rt := range r.targets {
			switch {
			case rt == t:
				exact = append(exact, r)
			case strings.Contains(rt, "%"):
				pre, post, _ := strings.Cut(rt, "%")
				if strings.HasPrefix(t, pre) && strings.HasSuffix(t, post) && len(t) >= len(pre)+len(post) {
					stem := t[len(pre) : len(t)-len(post)]
					p := r
					p.prereqs = make([]string, len(r.prereqs))
					for i, q := range r.prereqs {
						p.prereqs[i] = strings.Replace(q, "%", stem, 1)
					}
					pattern = append(pattern, p)
				}
			}
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return pattern
}

// expand replaces $(NAME) and ${NAME} by the Makefile's variables (auto holds $@, $<, $^), and
// $$ by $, as make does before it hands a line to the shell. Functions other than a plain
// reference are kept as written: their text still names what they run.
func (mf *makefile) expand(s string, auto map[string]string, depth int) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		c := s[i+1]
		switch {
		case c == '$':
			b.WriteByte('$')
			i++
		case c == '(' || c == '{':
			end := matchingClose(s, i+1)
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : end]
			v, ok := mf.vars[name]
			if av, isAuto := auto[name]; isAuto {
				v, ok = av, true
			}
			switch {
			case ok && depth < maxMakeExpand:
				b.WriteString(mf.expand(v, auto, depth+1))
			case ok:
				b.WriteString(v)
			case strings.ContainsAny(name, " ,"): // a function: $(shell …), $(wildcard …)
				b.WriteString(s[i : end+1])
			default: // make expands an unknown variable to nothing; the environment may set it
				b.WriteString("$" + name)
			}
			i = end
		default:
			if v, ok := auto[string(c)]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$" + string(c))
			}
			i++
		}
	}
	return b.String()
}

// matchingClose finds the bracket closing the one at open, or -1.
func matchingClose(s string, open int) int {
	o, c := s[open], byte(')')
	if o == '{' {
		c = '}'
	}
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case o:
			depth++
		case c:
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// shellFunctions are the commands of the $(shell …) calls in a line.
func shellFunctions(line string) []string {
	var out []string
	for _, open := range []string{"$(shell ", "${shell "} {
		rest := line
		for {
			i := strings.Index(rest, open)
			if i < 0 {
				break
			}
			end := matchingClose(rest, i+1)
			if end < 0 {
				out = append(out, rest[i+len(open):])
				break
			}
			out = append(out, rest[i+len(open):end])
			rest = rest[end+1:]
		}
	}
	return out
}

// PackageScripts is what a package manager runs for the scripts named in targets from a
// package.json: each script's command, in order; nothing for a file that is not JSON (the
// manager would refuse it too) or a script it does not define.
func PackageScripts(text string, targets []string) []string {
	var pkg struct {
		Scripts map[string]any `json:"scripts"`
	}
	if json.Unmarshal([]byte(strings.TrimPrefix(text, "\ufeff")), &pkg) != nil {
		return nil
	}
	var out []string
	for _, t := range targets {
		if s, ok := pkg.Scripts[t].(string); ok && strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
