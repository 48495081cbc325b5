package classifier

import (
	"bufio"
	"encoding/json"
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
			if len(p.prefilter().starts) == 0 {
				continue
			}
			filtered++
			re := regexp.MustCompile(p.String())
			for _, text := range texts {
				if p.prefilter().mayMatch(text) {
					continue
				}
				ruledOut++
				if re.MatchString(text) {
					t.Errorf("%s: the prefilter %v rules out %q, which the pattern matches", r.ID, p.prefilter().starts, text)
				}
			}
		}
	}
	if filtered < 60 || ruledOut < 1000 {
		t.Errorf("%d patterns have a prefilter, %d texts ruled out: the test checks too little", filtered, ruledOut)
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
	})
}
