package classifier

import (
	"slices"
	"strings"
)

// wordsNeeded is the second look a pattern gets before it is compiled and run: the literal words
// every match holds somewhere, read from the whole pattern where the prefilter reads only its
// start. A pattern whose start is common but whose end is not (the flow rule's
// ^send to=\S+ … carries=(read|unknown|encoded)$, on every send's line) was compiled by the
// first call that started like it; a hook process that denies a push compiled it for nothing.
//
// It is read from the source as conservatively as the prefilter: one top-level alternative,
// flags i and s at most, no escape whose length it does not know. Anything else needs no words.
// It is made only for a pattern the prefilter has let through, which in a hook process is a few.
type wordsNeeded struct {
	// choices: a match holds at least one word of each (a group of literal alternatives and the
	// run of literal text before it, carries=(read|unknown) is "carries=read" or "carries=unknown").
	choices [][]string
	fold    bool // (?i): words are lower case, compared without ASCII case
}

// maxChoices bounds the words one choice grows to as groups multiply it.
const maxChoices = 16

// heldBy is false only when text lacks every word of some choice, so no match is possible.
func (w wordsNeeded) heldBy(text string) bool {
	if w.fold && !isASCII(text) {
		return true // case folding reaches beyond ASCII, as in prefilter.mayMatch
	}
	for _, choice := range w.choices {
		held := false
		for _, word := range choice {
			if w.fold && containsFold(text, word) || !w.fold && strings.Contains(text, word) {
				held = true
				break
			}
		}
		if !held {
			return false
		}
	}
	return true
}

// plainFlags splits a leading (?i), (?s) or (?is) from src; ok is false for any other flag,
// which could change what the rest means (m, U), and for flags scoped to a group, (?i:…).
func plainFlags(src string) (fold bool, body string, ok bool) {
	rest, has := strings.CutPrefix(src, "(?")
	if !has || strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "P<") || strings.HasPrefix(rest, "<") {
		return false, src, true // no flags: a group opens the pattern
	}
	flags, after, closed := strings.Cut(rest, ")")
	if !closed || flags == "" || strings.Trim(flags, "is") != "" {
		return false, "", false
	}
	return strings.Contains(flags, "i"), after, true
}

// newWordsNeeded reads the words src requires; see wordsNeeded.
func newWordsNeeded(src string) wordsNeeded {
	fold, body, ok := plainFlags(src)
	if !ok || len(splitAlternatives(body)) > 1 {
		return wordsNeeded{}
	}
	w := wordsNeeded{choices: requiredWords(strings.TrimPrefix(body, "^")), fold: fold}
	if fold {
		for _, choice := range w.choices {
			for i := range choice {
				choice[i] = strings.ToLower(choice[i])
			}
		}
	}
	return w
}

// requiredWords reads src atom by atom. The words being built (cur) grow by each literal atom
// that must occur once where it stands; anything else (a class, an anchor, an optional or
// repeated atom) ends them, and they become a choice if none is empty. nil when src has a form
// not read here.
func requiredWords(src string) [][]string {
	var choices [][]string
	cur := []string{""}
	end := func() {
		if !slices.Contains(cur, "") {
			choices = append(choices, cur)
		}
		cur = []string{""}
	}
	for i := 0; i < len(src); {
		lits, next, ok := atomAt(src, i)
		if !ok {
			return nil
		}
		least, after := repeatAt(src, next)
		switch {
		case lits == nil || least == 0:
			end()
		case len(cur)*len(lits) > maxChoices:
			end()
			cur = lits
			if after != next {
				end()
			}
		default:
			cur = appendEach(cur, lits)
			if after != next {
				end() // at least one copy, but what follows follows the last
			}
		}
		i = after
	}
	end()
	return choices
}

// appendEach is every word of cur followed by every literal of lits.
func appendEach(cur, lits []string) []string {
	out := make([]string, 0, len(cur)*len(lits))
	for _, a := range cur {
		for _, b := range lits {
			out = append(out, a+b)
		}
	}
	return out
}

// atomAt reads the atom at src[i]: the literals it stands for (nil for one that is not a plain
// literal: a class, an anchor, a group of anything else) and where it ends. ok is false for a
// form not read here, which makes the whole pattern need no words.
func atomAt(src string, i int) (lits []string, end int, ok bool) {
	switch c := src[i]; {
	case c == '\\':
		if i+1 == len(src) {
			return nil, 0, false
		}
		switch e := src[i+1]; {
		case isPunct(e):
			return []string{src[i+1 : i+2]}, i + 2, true
		case strings.IndexByte("sSdDwWbBAz", e) >= 0:
			return nil, i + 2, true
		}
		return nil, 0, false // \x{…}, \p{…}, \Q…\E, octal: lengths not read here
	case c == '[':
		end := classEnd(src, i)
		return nil, end + 1, end < len(src)
	case c == '(':
		return groupAt(src, i)
	case c == '.' || c == '^' || c == '$':
		return nil, i + 1, true
	case c == '{':
		if _, _, isRepeat := bracesAt(src, i); isRepeat {
			return nil, 0, false // a repetition of nothing does not compile
		}
		return []string{"{"}, i + 1, true // a { that opens no repetition is a literal
	case c >= 0x80 || strings.IndexByte(")|*+?", c) >= 0:
		return nil, 0, false
	}
	return []string{src[i : i+1]}, i + 1, true
}

// groupAt reads the group opened at src[i]: its literals when each of its alternatives is plain
// literal text.
func groupAt(src string, i int) (lits []string, end int, ok bool) {
	closing := closingParen(src[i:])
	if closing < 0 {
		return nil, 0, false
	}
	end = i + closing + 1
	inner := src[i+1 : end-1]
	switch {
	case strings.HasPrefix(inner, "?:"):
		inner = inner[2:]
	case strings.HasPrefix(inner, "?P<") || strings.HasPrefix(inner, "?<"):
		_, after, named := strings.Cut(inner, ">")
		if !named {
			return nil, 0, false
		}
		inner = after
	case strings.HasPrefix(inner, "?"):
		return nil, 0, false // flags inside: (?i:…), (?m)
	}
	for _, alt := range splitAlternatives(inner) {
		lit, whole := wholeLiteral(alt)
		if !whole {
			return nil, end, true
		}
		lits = append(lits, lit)
	}
	return lits, end, true
}

// wholeLiteral is alt as the text it matches when it is nothing but literal characters and
// escaped punctuation.
func wholeLiteral(alt string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(alt); i++ {
		c := alt[i]
		switch {
		case c == '\\' && i+1 < len(alt) && isPunct(alt[i+1]):
			i++
			b.WriteByte(alt[i])
		case c >= 0x80 || strings.IndexByte(`\.[]()|*+?{}^$`, c) >= 0:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// repeatAt reads the quantifier at src[i], if any: how few copies of the atom before it a match
// holds, and where the quantifier ends (a lazy ? included). None: 1 and i.
func repeatAt(src string, i int) (least, end int) {
	if i >= len(src) {
		return 1, i
	}
	switch src[i] {
	case '*', '?':
		least, end = 0, i+1
	case '+':
		least, end = 1, i+1
	case '{':
		n, e, ok := bracesAt(src, i)
		if !ok {
			return 1, i
		}
		least, end = n, e
	default:
		return 1, i
	}
	if end < len(src) && src[end] == '?' {
		end++
	}
	return least, end
}

// bracesAt reads a repetition {n}, {n,} or {n,m} at src[i]: n and where it ends. Anything else
// there is literal text, as Go's parser reads it.
func bracesAt(src string, i int) (least, end int, ok bool) {
	j := i + 1
	digits := func() (int, bool) {
		start, n := j, 0
		for j < len(src) && '0' <= src[j] && src[j] <= '9' {
			n = min(n*10+int(src[j]-'0'), maxMinLen)
			j++
		}
		return n, j > start
	}
	n, has := digits()
	if !has {
		return 0, 0, false
	}
	if j < len(src) && src[j] == ',' {
		j++
		digits()
	}
	if j >= len(src) || src[j] != '}' {
		return 0, 0, false
	}
	return n, j + 1, true
}
