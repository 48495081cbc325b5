package classifier

import (
	"regexp/syntax"
	"strings"
)

// A prefilter says cheaply that a rule's pattern cannot match a text, from what the pattern
// plainly requires at the start of every match: the literal words a pattern anchored with ^
// begins with (^kubectl, ^(dropdb|dropuser)\b), or that an unanchored one holds
// (\bclaude\b.*, stratum\+). Most of a call's texts are then never run through most patterns,
// and a pattern no call needs is never compiled (the host hook is a process per call).
//
// It is derived from the pattern's source, conservatively: any form it does not read plainly
// (a flag other than i or s, an optional first group, a class or escape first) gives a
// prefilter that lets every text through. A test checks it against the regexp on the corpora and
// a fuzz target on any pattern.
type prefilter struct {
	starts []litStart // none: every text may match
	fold   bool       // (?i): compared without ASCII case
	// minLen is the fewest bytes a match takes, read where the pattern starts with no literal
	// ([A-Za-z0-9+/]{200,}): such a pattern ran, and was compiled, for every short text.
	minLen int
}

// litStart is one literal a match begins with, at the start of the text when anchored.
type litStart struct {
	lit      string
	anchored bool
}

// mayMatch is false only when no match of the pattern is possible in text.
func (f prefilter) mayMatch(text string) bool {
	if len(text) < f.minLen {
		return false
	}
	if len(f.starts) == 0 {
		return true
	}
	if f.fold && !isASCII(text) {
		return true // case folding reaches beyond ASCII (K, the Kelvin sign, is k)
	}
	for _, s := range f.starts {
		switch {
		case s.anchored && f.fold:
			if len(text) >= len(s.lit) && hasLowerPrefix(text, s.lit) {
				return true
			}
		case s.anchored:
			if strings.HasPrefix(text, s.lit) {
				return true
			}
		case f.fold:
			if containsFold(text, s.lit) {
				return true
			}
		case strings.Contains(text, s.lit):
			return true
		}
	}
	return false
}

// newPrefilter reads what src requires; see prefilter.
func newPrefilter(src string) prefilter {
	f := literalPrefilter(src)
	if len(f.starts) == 0 {
		f.minLen = minMatchLen(src)
	}
	return f
}

// literalPrefilter is the literals every match of src starts with, when it says them plainly.
func literalPrefilter(src string) prefilter {
	var f prefilter
	fold, src, ok := plainFlags(src)
	if !ok {
		return prefilter{}
	}
	f.fold = fold
	for _, alt := range splitAlternatives(src) {
		starts, ok := alternativeStarts(alt)
		if !ok {
			return prefilter{}
		}
		f.starts = append(f.starts, starts...)
	}
	if f.fold {
		for i := range f.starts {
			f.starts[i].lit = strings.ToLower(f.starts[i].lit)
		}
	}
	return f
}

// alternativeStarts is what one top-level alternative begins with: a literal, or a group whose
// own alternatives each begin with one.
func alternativeStarts(alt string) ([]litStart, bool) {
	anchored := strings.HasPrefix(alt, "^")
	alt = strings.TrimPrefix(alt, "^")
	for strings.HasPrefix(alt, `\b`) {
		alt = alt[2:] // a word boundary takes no text
	}
	if lit := literalRun(alt); lit != "" {
		return []litStart{{lit, anchored}}, true
	}
	if !strings.HasPrefix(alt, "(") || strings.HasPrefix(alt, "(?") && !strings.HasPrefix(alt, "(?:") {
		return nil, false
	}
	end := closingParen(alt)
	if end < 0 || end+1 < len(alt) && strings.ContainsRune("?*{", rune(alt[end+1])) {
		return nil, false // an optional group requires nothing
	}
	inner := strings.TrimPrefix(alt[1:end], "?:")
	var starts []litStart
	for _, a := range splitAlternatives(inner) {
		lit := literalRun(a)
		if lit == "" {
			return nil, false
		}
		starts = append(starts, litStart{lit, anchored})
	}
	return starts, true
}

// literalRun is the literal text src begins with. A character a quantifier makes optional
// (a* a? a{0,1}) is left out; escaped punctuation is literal; anything else ends the run.
func literalRun(src string) string {
	var b []byte // only when an escape makes the run differ from src
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src) && isPunct(src[i+1]):
			if b == nil {
				b = []byte(src[:i])
			}
			b = append(b, src[i+1])
			i++
		case c >= 0x80 || c == '\\' || strings.IndexByte(".[]()|*+?{}^$", c) >= 0:
			lit := src[:i]
			if b != nil {
				lit = string(b)
			}
			if strings.IndexByte("*?{", c) >= 0 && lit != "" {
				lit = lit[:len(lit)-1]
			}
			return lit
		case b != nil:
			b = append(b, c)
		}
	}
	if b != nil {
		return string(b)
	}
	return src
}

// splitAlternatives splits src at its top-level |, outside groups, classes and escapes.
func splitAlternatives(src string) []string {
	var out []string
	start := 0
	eachMeta(src, func(i, depth int) bool {
		if src[i] == '|' && depth == 0 {
			out = append(out, src[start:i])
			start = i + 1
		}
		return true
	})
	return append(out, src[start:])
}

// closingParen is the index of the parenthesis that closes the group src opens, or -1.
func closingParen(src string) int {
	end := -1
	eachMeta(src, func(i, depth int) bool {
		if src[i] == ')' && depth == 0 {
			end = i
			return false
		}
		return true
	})
	return end
}

// eachMeta calls f at each (, ) and | of src that is not escaped or in a class, with the depth
// of groups after it; f returns false to stop.
func eachMeta(src string, f func(i, depth int) bool) {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
			continue
		case '[':
			i = classEnd(src, i)
			continue
		case '(':
			depth++
		case ')':
			depth--
		case '|':
		default:
			continue
		}
		if !f(i, depth) {
			return
		}
	}
}

// classEnd is the index of the ] that closes the class opened at src[i] (a ] first in the class,
// or after ^, is literal; [:alpha:] is a name inside it).
func classEnd(src string, i int) int {
	j := i + 1
	if j < len(src) && src[j] == '^' {
		j++
	}
	if j < len(src) && src[j] == ']' {
		j++
	}
	for ; j < len(src); j++ {
		switch {
		case src[j] == '\\':
			j++
		case src[j] == '[' && j+1 < len(src) && src[j+1] == ':':
			if k := strings.Index(src[j+2:], ":]"); k >= 0 {
				j += k + 3
			}
		case src[j] == ']':
			return j
		}
	}
	return len(src)
}

func isPunct(c byte) bool {
	return c < 0x80 && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// containsFold is strings.Contains without ASCII case, for ASCII text and a lower-case lit.
func containsFold(text, lit string) bool {
	for i := 0; i+len(lit) <= len(text); i++ {
		if lower(text[i]) == lit[0] && hasLowerPrefix(text[i:], lit) {
			return true
		}
	}
	return false
}

// hasLowerPrefix: text begins with the lower-case lit, without ASCII case.
func hasLowerPrefix(text, lit string) bool {
	if len(text) < len(lit) {
		return false
	}
	for j := 0; j < len(lit); j++ {
		if lower(text[j]) != lit[j] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// maxMinLen bounds minMatchLen's sums: no text the classifier reads is longer.
const maxMinLen = 1 << 30

// minMatchLen is a lower bound of the bytes any match of src takes: each character at least one
// byte, whatever case folding or classes allow. 0 when src does not parse.
func minMatchLen(src string) int {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return 0
	}
	return minLen(re)
}

func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return min(maxMinLen, re.Min*minLen(re.Sub[0]))
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n = min(maxMinLen, n+minLen(sub))
		}
		return n
	case syntax.OpAlternate:
		n := maxMinLen
		for _, sub := range re.Sub {
			n = min(n, minLen(sub))
		}
		return n
	}
	return 0 // empty, anchors, boundaries, star, quest, no match
}
