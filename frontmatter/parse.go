package frontmatter

import (
	"fmt"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
)

// entry is one top-level key of a frontmatter: its name, its inline value as written, and the
// bytes of its lines (the key's line and every line that belongs to its value).
type entry struct {
	key        string
	scalar     string
	start, end int
}

// value is how an entry's value goes on after its key's line.
type value int

const (
	inline    value = iota // a scalar or flow list on the key's line; more-indented lines continue it
	container              // nothing on the key's line: a list or members follow
	block                  // a | or > block scalar: more-indented lines are text
)

var (
	keyLine     = lazyregexp.New(`^([A-Za-z_][A-Za-z0-9_-]*):(?:[ ]+(.*))?$`)
	blockHeader = lazyregexp.New(`^[|>](?:[1-9][+-]?|[+-][1-9]?)?(?:[ ]+#.*)?$`)
	blockIndent = lazyregexp.New(`^[|>][+-]?([1-9])`)
)

// parse reads text (a frontmatter's YAML) as the subset this package accepts, or says why not.
// Every line at column 0 is a key, a comment, a blank or a list item of the key before it; every
// indented line belongs to the key before it. Anything else (a quoted, tagged or complex key, an
// anchor, a flow mapping, a tab in the indentation, an indented first line) is a problem: what
// another YAML parser would make of it is not guessed at.
func parse(text []byte) ([]entry, string) {
	var entries []entry
	var cur *entry
	kind, indent := inline, 0
	at := 0
	for n, line := range strings.SplitAfter(string(text), "\n") {
		start := at
		at += len(line)
		l := strings.TrimRight(line, "\r\n")
		problem := func(why string) string { return fmt.Sprintf("line %d: %s", n+1, why) }
		lead := len(l) - len(strings.TrimLeft(l, " \t"))
		if strings.Contains(l[:lead], "\t") {
			return nil, problem("a tab in the indentation")
		}
		body := l[lead:]
		switch {
		case body == "":
			// A blank line belongs to whatever surrounds it.
		case lead > 0:
			if cur == nil {
				return nil, problem("an indented line before any key")
			}
			if kind == block {
				if indent == 0 {
					indent = lead
				} else if lead < indent {
					return nil, problem("a line less indented than the block text it follows")
				}
			}
			if kind == inline && (strings.Contains(body, ": ") || strings.HasSuffix(body, ":")) {
				// A plain value folds the lines below it into its text; members there are an
				// error that each parser recovers from in its own way.
				return nil, problem("members under a key that already has a value")
			}
			cur.end = at
		case body[0] == '#':
			cur = nil // a comment at column 0 ends a block scalar
		case body[0] == '-' && (len(body) == 1 || body[1] == ' '):
			if cur == nil || kind != container {
				return nil, problem("a list item that belongs to no key")
			}
			cur.end = at
		default:
			m := keyLine.FindStringSubmatch(l)
			if m == nil {
				return nil, problem(fmt.Sprintf("%.40q is not a plain `key: value` line", l))
			}
			v := stripComment(m[2])
			k, why := valueKind(v)
			if why != "" {
				return nil, problem(m[1] + ": " + why)
			}
			entries = append(entries, entry{key: m[1], scalar: v, start: start, end: at})
			cur, kind, indent = &entries[len(entries)-1], k, 0
			if b := blockIndent.FindStringSubmatch(v); b != nil {
				indent = int(b[1][0] - '0')
			}
		}
	}
	return entries, ""
}

// valueKind says how the value written on a key's line goes on, or why it is not read.
func valueKind(v string) (value, string) {
	switch {
	case v == "":
		return container, ""
	case v[0] == '|' || v[0] == '>':
		if !blockHeader.MatchString(v) {
			return 0, "an unreadable block scalar header"
		}
		return block, ""
	case v[0] == '[' || v[0] == '{':
		// A flow list or mapping closed on its line is nested under its key whatever it holds;
		// one that goes on below could take lines at column 0 into it.
		if end := map[byte]string{'[': "]", '{': "}"}[v[0]]; !strings.HasSuffix(v, end) {
			return 0, "a flow list or mapping that does not close on its line"
		}
		return inline, ""
	case v[0] == '"':
		if !closedQuote(v, '"') {
			return 0, "a quoted value that does not close on its line"
		}
		return inline, ""
	case v[0] == '\'':
		if !closedQuote(v, '\'') {
			return 0, "a quoted value that does not close on its line"
		}
		return inline, ""
	case strings.ContainsRune("&*!{}[]%@`,?:-", rune(v[0])) && !plainDash(v):
		return 0, fmt.Sprintf("a value starting with %q (an anchor, alias, tag, flow mapping or indicator)", v[0])
	}
	return inline, ""
}

// plainDash is a value such as "-1" or "--x": a dash not followed by a blank is plain text.
func plainDash(v string) bool { return v[0] == '-' && len(v) > 1 && v[1] != ' ' }

// closedQuote reports whether v, starting with quote q, closes it with nothing after but blanks
// or a comment.
func closedQuote(v string, q byte) bool {
	for i := 1; i < len(v); i++ {
		switch {
		case q == '"' && v[i] == '\\':
			i++
		case v[i] == q && q == '\'' && i+1 < len(v) && v[i+1] == '\'':
			i++
		case v[i] == q:
			rest := strings.TrimSpace(v[i+1:])
			return rest == "" || rest[0] == '#'
		}
	}
	return false
}

// stripComment takes a trailing " #comment" off a value written on a key's line, unless the
// value is quoted (a '#' may stand inside the quotes).
func stripComment(v string) string {
	v = strings.TrimRight(v, " ")
	if v == "" || v[0] == '"' || v[0] == '\'' {
		return v
	}
	if v[0] == '#' {
		return ""
	}
	if i := strings.Index(v, " #"); i >= 0 {
		return strings.TrimRight(v[:i], " ")
	}
	return v
}
