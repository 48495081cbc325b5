package classifier

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

func TestPrefilterReadsWhatAPatternPlainlyRequires(t *testing.T) {
	cases := []struct {
		src  string
		want []litStart // nil: no prefilter
		fold bool
	}{
		{`^kubectl (.* )?delete\b`, []litStart{{"kubectl ", true}}, false},
		{`^(dropdb|dropuser)\b`, []litStart{{"dropdb", true}, {"dropuser", true}}, false},
		{`^(mkfs(\.[a-z0-9]+)?|mke2fs)`, []litStart{{"mkfs", true}, {"mke2fs", true}}, false},
		{`^terraform (.* )?destroy\b|^tofu destroy`, []litStart{{"terraform ", true}, {"tofu destroy", true}}, false},
		{`\b(pgrep|pidof)\b.*\bkill\b`, []litStart{{"pgrep", false}, {"pidof", false}}, false},
		{`stratum\+(tcp|ssl)://`, []litStart{{"stratum+", false}}, false},
		{`(?i)^(psql|MySQL) `, []litStart{{"psql", true}, {"mysql", true}}, true},
		{`(?s)^(python[0-9.]*|node)`, []litStart{{"python", true}, {"node", true}}, false},
		{`^truncate\b.* -s ?0\b`, []litStart{{"truncate", true}}, false},
		{`^colou?r`, []litStart{{"colo", true}}, false},     // u? is optional
		{`^ab*c`, []litStart{{"a", true}}, false},           // b* is optional, and ends the run
		{`^ab+c`, []litStart{{"ab", true}}, false},          // b+ needs one b
		{`^\$HOME/x`, []litStart{{"$HOME/x", true}}, false}, // escaped punctuation is literal
		{`(?i)(^|/)\.aws/credentials$`, nil, false},         // a group with an empty alternative
		{`^(a|b)?c`, nil, false},   // an optional group
		{`^[a-z]+ x`, nil, false},  // a class first
		{`(?m)^kill`, nil, false},  // ^ would match after any newline
		{`^(?i:kill)`, nil, false}, // flags inside a group
		{`^\x{2028}`, nil, false},  // an escape that is not punctuation
		{`^é`, nil, false},         // a rune a quantifier could split
		{`^kill|.*`, nil, false},   // one alternative requires nothing
		{`[A-Za-z0-9+/]{200,}={0,2}`, nil, false},
	}
	for _, tc := range cases {
		got := newPrefilter(tc.src)
		if !slices.Equal(got.starts, tc.want) || len(tc.want) > 0 && got.fold != tc.fold {
			t.Errorf("%s: starts %v fold %v, want %v fold %v", tc.src, got.starts, got.fold, tc.want, tc.fold)
		}
	}
}

func TestPrefilterRulesOutOnlyTextsThePatternCannotMatch(t *testing.T) {
	cases := []struct {
		src, text string
		may       bool
	}{
		{`^kubectl (.* )?delete\b`, "git status", false},
		{`^kubectl (.* )?delete\b`, "kubectl get pods", true},
		{`^kubectl (.* )?delete\b`, "echo kubectl delete", false},
		{`\bclaude\b.*--dangerously`, "npx claude --dangerously-skip-permissions", true},
		{`\bclaude\b.*--dangerously`, "ls", false},
		{`(?i)^(psql|mysql) `, "MYSQL -e 'drop'", true},
		{`(?i)^(psql|mysql) `, "git log", false},
		{`(?i)^kill`, "\u212Aill 1", true}, // the Kelvin sign folds to k: left to the expression
		{`(?i)\bignore\s+all`, "Please IGNORE all of this", true},
		{`(?i)\bignore\s+all`, "nothing to see", false},
		// No literal to look for: a text shorter than any match is ruled out.
		{`[A-Za-z0-9+/]{200,}={0,2}`, "git status", false},
		{`[A-Za-z0-9+/]{200,}={0,2}`, strings.Repeat("QUFB", 50), true},
		{`(ab|c{3})+x?`, "ab", true},
		{`(ab|c{3})+x?`, "a", false},
		{`(?i)[k]{2}`, "\u212A", true}, // one rune of three bytes: a bound in bytes, never above
		{`\b.?\B`, "", true},
	}
	for _, tc := range cases {
		if got := newPrefilter(tc.src).mayMatch(tc.text); got != tc.may {
			t.Errorf("%s on %q: mayMatch %v, want %v", tc.src, tc.text, got, tc.may)
		}
	}
}

// The prefilter never hides a match of a default rule's pattern, on every text of the corpora and
// every suffix of it that starts a word (the classifier matches commands one by one).
func TestPrefilterNeverHidesAMatchOfADefaultPatternOnTheCorpora(t *testing.T) {
	texts := corpusTexts(t)
	c := newTestClassifier(t, Policy{})
	filtered, ruledOut := 0, 0
	for _, r := range c.all {
		for _, p := range slices.Concat(r.Patterns, r.Unless) {
			if len(p.prefilter().starts) == 0 && len(p.wordsNeeded().choices) == 0 {
				continue
			}
			filtered++
			re := regexp.MustCompile(p.String())
			for _, text := range texts {
				if p.prefilter().mayMatch(text) && p.wordsNeeded().heldBy(text) {
					continue
				}
				ruledOut++
				if re.MatchString(text) {
					t.Errorf("%s: the prefilter %v or the words %v rule out %q, which the pattern matches", r.ID, p.prefilter().starts, p.wordsNeeded().choices, text)
				}
			}
		}
	}
	if filtered < 60 || ruledOut < 1000 {
		t.Errorf("%d patterns have a prefilter, %d texts ruled out: the test checks too little", filtered, ruledOut)
	}
}

func TestWordsNeededAreWhatEveryMatchHolds(t *testing.T) {
	cases := []struct {
		src  string
		want [][]string // nil: no words
	}{
		{`^send to=\S+ private=\S+ carries=(read|unknown|encoded)$`,
			[][]string{{"send to="}, {" private="}, {" carries=read", " carries=unknown", " carries=encoded"}}},
		{`(?i)\bGit\b.*\bpush\b`, [][]string{{"git"}, {"push"}}},
		{`^colou?r`, [][]string{{"colo"}, {"r"}}}, // u? is optional
		{`^ab+c`, [][]string{{"ab"}, {"c"}}},      // one b at least, then more
		{`a(?:b|c)(d|e)`, [][]string{{"abd", "abe", "acd", "ace"}}},
		{`a(b|)c`, [][]string{{"abc", "ac"}}},         // an empty alternative
		{`(x|y)?z`, [][]string{{"z"}}},                // an optional group
		{`\$HOME/\.ssh`, [][]string{{"$HOME/.ssh"}}},  // escaped punctuation is literal
		{`a{2}b{x`, [][]string{{"a"}, {"b{x"}}},       // a { that opens no repetition is literal
		{`(?P<v>ab|cd)e`, [][]string{{"abe", "cde"}}}, // a named group
		{`a[bc]d`, [][]string{{"a"}, {"d"}}},          // a class ends a word
		{`(a|b)(c|d)(e|f)(g|h)(i|j)`, [][]string{{"ace", "acf", "ade", "adf", "bce", "bcf", "bde", "bdf"}, {"g", "h"}}[:1]},
		{`kill|pkill`, nil}, // two alternatives
		{`(?m)^kill`, nil},  // a flag that changes ^
		{`a(?i)b`, nil},     // flags part way
		{`\x{41}bc`, nil},   // an escape whose length is not read
		{`é`, nil},          // a rune
		{`[a-z]+`, nil},     // nothing literal
	}
	for _, tc := range cases {
		got := newWordsNeeded(tc.src).choices
		if tc.src == `(a|b)(c|d)(e|f)(g|h)(i|j)` {
			// 32 words would be too many to carry: the choice is cut where it would pass 16.
			if len(got) == 0 || len(got[0]) > maxChoices {
				t.Errorf("%s: %q, want choices of at most %d words", tc.src, got, maxChoices)
			}
			continue
		}
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: words %q, want %q", tc.src, got, tc.want)
		}
	}
}

// The flow rule's line for a send that carries nothing the session read: the start of the
// pattern is there, its end is not; the expression is not compiled to find that out.
func TestAFlowLineThatCannotMatchDoesNotCompileTheRule(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	line := "send to=origin private=none untrusted=none carries=none"
	if _, ok := c.JudgeFlow(line); ok {
		t.Fatalf("%q matched a flow rule", line)
	}
	for _, r := range c.all {
		for _, p := range r.Patterns {
			if r.Target == TargetFlow && p.c.re != nil {
				t.Errorf("%s: its pattern was compiled to judge %q", r.ID, line)
			}
		}
	}
	if _, ok := c.JudgeFlow("send to=origin private=~/.ssh/id_rsa untrusted=WebFetch carries=unknown"); !ok {
		t.Error("a send of unknown data after an untrusted read and a private one matched no flow rule")
	}
}

func corpusTexts(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../../shared/corpus/*.jsonl")
	if len(files) == 0 {
		cbtest.NoShared(t, "the corpora", os.ErrNotExist)
	}
	var texts []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 4<<20)
		for n := 0; sc.Scan() && n < 400; n++ {
			var row map[string]any
			if json.Unmarshal(sc.Bytes(), &row) != nil {
				continue
			}
			for _, v := range row {
				if s, ok := v.(string); ok && len(s) < 4096 {
					texts = append(texts, s)
					for i := 1; i < len(s); i++ {
						if s[i-1] == ' ' || s[i-1] == '/' || s[i-1] == '|' || s[i-1] == ';' {
							texts = append(texts, s[i:])
						}
					}
				}
			}
		}
		fh.Close()
	}
	return texts
}

func FuzzPrefilterNeverHidesAMatch(f *testing.F) {
	for _, s := range [][2]string{
		{`^kubectl (.* )?delete\b`, "kubectl delete ns x"},
		{`(?i)^(psql|mysql) `, "MySQL -e"},
		{`^colou?r`, "color"},
		{`\b(pgrep|pidof)\b.*\bkill\b`, "pgrep x | kill"},
		{`^a\.b|^(c|d)e`, "de"},
		{`^[]a]b`, "]b"},
		{`[A-Za-z0-9+/]{20,}={0,2}`, "QUFBQUFBQUFBQUFBQUFBQUFB=="},
		{`(a|bc){2,3}(?i:k)`, "abcK"},
		{`^send to=\S+ carries=(read|unknown)$`, "send to=x carries=read"},
		{`x{2}y{,3}z\{(?P<n>a|b)+c`, "xxy{,3}z{abbc"},
		{`(?i)ab*c(d|e)?f\.g`, "ACF.G"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, src, text string) {
		re, err := regexp.Compile(src)
		if err != nil {
			return
		}
		if pre := newPrefilter(src); !pre.mayMatch(text) && re.MatchString(text) {
			t.Fatalf("%q: the prefilter %v (at least %d bytes) rules out %q, which the expression matches", src, pre.starts, pre.minLen, text)
		}
		if w := newWordsNeeded(src); !w.heldBy(text) && re.MatchString(text) {
			t.Fatalf("%q: the words %q rule out %q, which the expression matches", src, w.choices, text)
		}
	})
}

// Patterns built at random from the forms the words are read from, each with a text built to
// match it: neither the prefilter nor the words ever rule such a text out.
func TestPrefilterAndWordsHoldInTextsBuiltToMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lits := []string{"a", "b", "-", "=", " ", "{", "}", `\.`, `\$`, `\(`}
	type atom struct {
		src string
		gen func() string
	}
	literal := func() atom {
		l := lits[rng.IntN(len(lits))]
		return atom{l, func() string { return strings.TrimPrefix(l, `\`) }}
	}
	group := func() atom {
		var alts []string
		for range 1 + rng.IntN(3) {
			var a strings.Builder
			for range rng.IntN(3) {
				a.WriteString(lits[rng.IntN(len(lits))])
			}
			alts = append(alts, a.String())
		}
		open := []string{"(", "(?:", "(?P<g>"}[rng.IntN(3)]
		return atom{open + strings.Join(alts, "|") + ")", func() string {
			return strings.ReplaceAll(alts[rng.IntN(len(alts))], `\`, "")
		}}
	}
	quantifiers := []struct {
		q           string
		least, most int
	}{{"", 1, 1}, {"", 1, 1}, {"", 1, 1}, {"?", 0, 1}, {"*", 0, 3}, {"+", 1, 3}, {"{2}", 2, 2}, {"{1,3}", 1, 3}, {"{0,}", 0, 2}}
	checked := 0
	for range 30000 {
		var src, match strings.Builder
		fold := rng.IntN(4) == 0
		if fold {
			src.WriteString("(?i)")
		}
		if rng.IntN(3) == 0 {
			src.WriteString("^")
		}
		named := false
		for range 1 + rng.IntN(8) {
			var a atom
			switch rng.IntN(6) {
			case 0, 1, 2:
				a = literal()
			case 3:
				a = atom{"[ab]", func() string { return string("ab"[rng.IntN(2)]) }}
			case 4:
				a = atom{[]string{".", `\S`, `\w`}[rng.IntN(3)], func() string { return "z" }}
			default:
				a = group()
				if strings.HasPrefix(a.src, "(?P<g>") {
					if named {
						a.src = "(" + strings.TrimPrefix(a.src, "(?P<g>")
					}
					named = true
				}
			}
			q := quantifiers[rng.IntN(len(quantifiers))]
			if q.q != "" && (a.src == "{" || a.src == "}") {
				a.src = `\` + a.src
			}
			src.WriteString(a.src + q.q)
			if q.q != "" && rng.IntN(4) == 0 {
				src.WriteString("?") // lazy
			}
			for range q.least + rng.IntN(q.most-q.least+1) {
				match.WriteString(a.gen())
			}
		}
		text := match.String()
		if fold {
			text = strings.ToUpper(text)
		}
		if !strings.Contains(src.String(), "^") {
			text = "x " + text
		}
		text += " y"
		re, err := regexp.Compile(src.String())
		if err != nil {
			t.Fatalf("the test built %q, which does not compile: %v", src.String(), err)
		}
		if !re.MatchString(text) {
			t.Fatalf("the test built %q for %q, which it does not match", text, src.String())
		}
		pre, words := newPrefilter(src.String()), newWordsNeeded(src.String())
		if !pre.mayMatch(text) || !words.heldBy(text) {
			t.Fatalf("%q: the prefilter %v or the words %q rule out %q, which the expression matches", src.String(), pre.starts, words.choices, text)
		}
		if len(words.choices) > 0 {
			checked++
		}
	}
	if checked < 10000 {
		t.Errorf("only %d patterns of 30000 needed words: the test checks too little", checked)
	}
}
