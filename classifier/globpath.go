package classifier

import (
	"cmp"
	"path"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
	"github.com/coworkbridge/coworkbridge/classifier/facts"
	"github.com/coworkbridge/coworkbridge/claudehook"
)

// A path rule is a regular expression over the path a call names, written for paths as they are
// spelt. A shell expands a glob in any component before the reader opens it (cat ~/.ss?/notes,
// ~/Lib*/Key*/login*), and a file tool's glob does the same, so a globbed path is also judged by
// what it can name: the places a path pattern names from its start (~/.ssh, ~/Library/Keychains)
// are listed once from the expression itself, and a glob that can name one of them, or something
// inside it, matches the rule.

// maxPatternPaths bounds the places listed for one pattern; a pattern that names more is judged
// as written only.
const maxPatternPaths = 256

// patternPaths is the places expr names, listed once per classifier.
func (c *Classifier) patternPaths(expr string) []string {
	if v, ok := c.globPaths.Load(expr); ok {
		return v.([]string)
	}
	paths := patternPaths(expr)
	c.globPaths.Store(expr, paths)
	return paths
}

// patternPaths lists, for one expression anchored at the start (^~/…, ^/…), the paths it names;
// none for another.
func patternPaths(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginText && re.Sub[0].Op != syntax.OpBeginLine {
		return nil
	}
	e := enumerator{max: maxPatternPaths}
	outs, _ := e.strings(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1:]}, []string{""})
	var paths []string
	seen := map[string]bool{}
	for _, s := range outs {
		s = strings.TrimRight(s, "/")
		if (strings.HasPrefix(s, "~/") || strings.HasPrefix(s, "/")) && len(s) > 2 && !seen[s] {
			seen[s] = true
			paths = append(paths, s)
		}
	}
	return paths
}

// enumerator lists the strings an expression matches, up to the first part whose strings
// cannot be listed (a repetition, a wide class): what it returns are then prefixes of the
// matches, which is what a folder is.
type enumerator struct{ max int }

// strings extends each of prefixes by what re matches; ok is false when re's strings could not
// all be listed, and the prefixes returned stop where they could not.
func (e *enumerator) strings(re *syntax.Regexp, prefixes []string) (out []string, ok bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpEndText, syntax.OpEndLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return prefixes, true
	case syntax.OpLiteral:
		lit := string(re.Rune)
		if re.Flags&syntax.FoldCase != 0 {
			lit = strings.ToLower(lit)
		}
		return e.each(prefixes, []string{lit}), true
	case syntax.OpCharClass:
		var alts []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if alts = append(alts, strings.ToLower(string(r))); len(alts) > 8 {
					return prefixes, false
				}
			}
		}
		return e.each(prefixes, alts), true
	case syntax.OpCapture:
		return e.strings(re.Sub[0], prefixes)
	case syntax.OpQuest:
		with, ok := e.strings(re.Sub[0], prefixes)
		return e.union(prefixes, with), ok
	case syntax.OpConcat:
		cur := prefixes
		for _, sub := range re.Sub {
			next, ok := e.strings(sub, cur)
			if !ok {
				return next, false
			}
			cur = next
		}
		return cur, true
	case syntax.OpAlternate:
		var all []string
		complete := true
		for _, sub := range re.Sub {
			got, ok := e.strings(sub, prefixes)
			complete = complete && ok
			all = e.union(all, got)
		}
		return all, complete
	}
	return prefixes, false
}

// each is every prefix followed by every suffix, within the bound.
func (e *enumerator) each(prefixes, suffixes []string) []string {
	var out []string
	for _, p := range prefixes {
		for _, s := range suffixes {
			if len(out) >= e.max {
				return out
			}
			out = append(out, p+s)
		}
	}
	return out
}

func (e *enumerator) union(a, b []string) []string {
	for _, s := range b {
		if len(a) >= e.max {
			break
		}
		a = append(a, s)
	}
	return a
}

// globNames is the first place of paths that the glob pattern p can name, or something inside;
// "" for none. As a shell's (and Python's) glob, a wildcard does not name a hidden folder unless
// its segment starts with a dot too: ~/*/config is not ~/.ssh/config. A glob in the last name
// alone is left to the expressions (~/.aws/cred* meets them as written), but for exactly a place
// the expression names (~/.netr? is ~/.netrc), when lastName.
func globNames(p string, paths []string, lastName bool) string {
	ps := segments(p)
	if slices.Contains(ps, "**") {
		return "" // a search through every folder below: the map's searches judge those
	}
	inFolder := globbed(strings.Join(ps[:len(ps)-1], "/"))
	if !inFolder && !lastName {
		return ""
	}
	for _, place := range paths {
		ds := segments(place)
		if !inFolder && len(ds) != len(ps) {
			continue
		}
		if inside, _ := globReaches(p, place); inside && !hiddenSkipped(ps, ds) {
			return place
		}
	}
	return ""
}

// hiddenSkipped reports whether a wildcard segment of ps would have to name a hidden segment of
// ds without a leading dot of its own.
func hiddenSkipped(ps, ds []string) bool {
	for i := 0; i < len(ps) && i < len(ds); i++ {
		if strings.HasPrefix(ds[i], ".") && !strings.HasPrefix(ps[i], ".") {
			return true
		}
	}
	return false
}

// maxLinked bounds the paths of one command looked up on the machine.
const maxLinked = 64

// linkedItems adds, for each path a shell command reads or writes that the machine's links or
// the protected places' identities take elsewhere (k/notes where k is a link to ~/.ssh, a hard
// link to a protected file), the same item at that place.
func linkedItems(items []item, cwd string, where func(string) (string, bool)) []item {
	for _, c := range linkCandidates(items, cwd) {
		if r, ok := where(c.at); ok {
			if canon := facts.CanonPath(r, ""); canon != c.it.text {
				it := c.it
				it.text = canon
				items = append(items, it)
			}
		}
	}
	return items
}

// linkCandidate is a path a shell on the Mac would follow links along (at: absolute, or from ~),
// and the item it stands for.
type linkCandidate struct {
	at string
	it item
}

// linkCandidates are the reads and writes of items a shell on the Mac reaches by a path, at most
// maxLinked: absolute ones, and the bare names a reading program is given (cat notes, where notes
// is a link or a second name of a protected file), made absolute from the folder the command
// runs in (cwd, or the item's own after a cd). A pattern is left to the pattern rules.
func linkCandidates(items []item, cwd string) []linkCandidate {
	var out []linkCandidate
	add := func(it item, p string) {
		if len(out) >= maxLinked || globbed(p) {
			return
		}
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
			dir := cmp.Or(it.cwd, cwd)
			if !strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "~/") {
				return
			}
			p = path.Join(dir, p)
		}
		if !slices.ContainsFunc(out, func(c linkCandidate) bool { return c.at == p }) { // a few: no map
			out = append(out, linkCandidate{at: p, it: it})
		}
	}
	for _, it := range items {
		switch {
		case it.target == TargetRead || it.target == TargetEdit:
			add(it, it.text)
		case it.target == TargetBash && it.cmd != nil && effects.IsReader(it.cmd.Name):
			read, _ := fileOperands(it.cmd)
			for _, a := range read {
				if !strings.Contains(a, "/") && !strings.HasPrefix(a, "-") {
					add(item{target: TargetRead, text: a, cwd: it.cwd}, a)
				}
			}
		}
	}
	return out
}

// RunsAndLinks is what a door that judges in another process hands over of a shell command that
// runs on this machine, from one analysis: the files it runs, read with read as ReadRuns reads
// them, and the paths Call.Where is asked about when the call is judged with those files (as
// LinkPaths lists them, with the paths the files it runs name besides). Nil, nil for a call that
// is not a shell command.
func (c *Classifier) RunsAndLinks(p claudehook.Payload, read func(string) (string, error)) (map[string]string, []string) {
	if normalisedTool(p.ToolName) != "Bash" || c.denyAll != "" {
		return ReadRuns(p, read), nil
	}
	items, _ := c.items(p, machine{read: read})
	if len(items) == 0 || items[0].an == nil {
		return nil, nil // not a tool input ReadRuns could read either
	}
	var out []string
	for _, cand := range linkCandidates(items, p.Cwd) {
		out = append(out, cand.at)
	}
	return items[0].an.Files, out
}

// LinkPaths are the paths of a shell command that Call.Where is asked about, in the same order
// and bound: for a door that works out where they lead in another process (a system daemon
// asks the user's worker, who sees the user's links) and hands the answers back as a table.
// Nil for a call that is not a shell command. What a command names does not depend on the
// policy: any classifier gives the same.
func (c *Classifier) LinkPaths(p claudehook.Payload) []string {
	if normalisedTool(p.ToolName) != "Bash" || c.denyAll != "" {
		return nil
	}
	items, _ := c.items(p, machine{})
	var out []string
	for _, cand := range linkCandidates(items, p.Cwd) {
		out = append(out, cand.at)
	}
	return out
}

// globBase is the folder a pattern's literal part names: where a listing by it starts.
func globBase(p string) string {
	i := strings.IndexAny(p, "*?[{")
	if i < 0 {
		return p
	}
	return path.Dir(p[:i] + "x")
}
