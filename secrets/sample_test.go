package secrets

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
)

// sampler writes strings that an expression matches, chosen at random, so that every rule of
// the set is tested with a secret of its own shape rather than a hand-picked few.
type sampler struct {
	rng *rand.Rand
	b   strings.Builder
}

// sample is a string re may match (anchors and word boundaries are not honoured: the caller
// checks the match).
func sample(re *regexp.Regexp, seed uint64) string {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return ""
	}
	s := &sampler{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s.walk(tree.Simplify())
	return s.b.String()
}

func (s *sampler) walk(re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && s.rng.IntN(2) == 0 {
				r = unicode.SimpleFold(r)
			}
			s.b.WriteRune(r)
		}
	case syntax.OpCharClass:
		s.b.WriteRune(s.classRune(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		s.b.WriteByte(byte('a' + s.rng.IntN(26)))
	case syntax.OpCapture:
		s.walk(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := repeatBounds(re)
		for range lo + s.rng.IntN(hi-lo+1) {
			s.walk(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			s.walk(sub)
		}
	case syntax.OpAlternate:
		s.walk(re.Sub[s.rng.IntN(len(re.Sub))])
	}
}

// repeatBounds keeps open and long optional repetitions short: a prefix of context needs a few
// characters, a secret's exact length its exact count.
func repeatBounds(re *syntax.Regexp) (lo, hi int) {
	switch re.Op {
	case syntax.OpStar:
		return 0, 2
	case syntax.OpPlus:
		return 1, 3
	case syntax.OpQuest:
		return 0, 1
	}
	lo, hi = re.Min, re.Max
	if hi < 0 || hi > lo+8 {
		hi = lo + min(8, max(hi-lo, 0))
		if re.Max < 0 {
			hi = lo + 3
		}
	}
	return lo, hi
}

// classRune picks a printable character of a class, preferring ASCII, at random.
func (s *sampler) classRune(ranges []rune) rune {
	var pool []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < 0x7f; r++ {
			if unicode.IsPrint(r) && r != ' ' {
				pool = append(pool, r)
			}
		}
	}
	if len(pool) == 0 {
		if len(ranges) > 0 && ranges[0] < 0x80 {
			return ranges[0]
		}
		return 'x'
	}
	return pool[s.rng.IntN(len(pool))]
}
