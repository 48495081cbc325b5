package classifier

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The embedded rules, whose patterns the binary compiles only when a call needs them, parse as an
// admin's file does: every pattern compiles. And they are every file of rules/, as it is: a file
// added to the folder and not to the list would never be read.
func TestEveryEmbeddedRulePatternCompiles(t *testing.T) {
	files, err := os.ReadDir("rules")
	if err != nil || len(files) < 7 {
		t.Fatalf("rule files: %v (%d)", err, len(files))
	}
	if len(files) != len(defaultRules) {
		t.Fatalf("rules/ holds %d files, the embedded list %d: add the new file to defaultRules", len(files), len(defaultRules))
	}
	for i, f := range files {
		data, err := os.ReadFile(filepath.Join("rules", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e := defaultRules[i]; e.name != "default/"+f.Name() || e.text != string(data) {
			t.Errorf("defaultRules[%d] is %s, not rules/%s as it is", i, e.name, f.Name())
		}
		target := Target(strings.TrimSuffix(f.Name(), ".rules"))
		if _, err := ParseRules(f.Name(), target, strings.NewReader(string(data)), validatorNames(), map[string]bool{"allowed_executables": true}); err != nil {
			t.Error(err)
		}
	}
}

// A default rule's pattern is compiled the first time a call needs it, and then kept.
func TestDefaultPatternsAreCompiledOnFirstUseAndKept(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	var p Pattern
	for _, r := range c.all {
		if len(r.Patterns) > 0 {
			p = r.Patterns[0]
			break
		}
	}
	first, again := p.Regexp(), p.Regexp()
	if p.String() == "" || first == nil || first != again {
		t.Fatalf("pattern %q: compiled %v, kept %v", p.String(), first != nil, first == again)
	}
}

// validRuleID is the rule-id grammar the rule language documents, ^[a-z0-9][a-z0-9._-]{0,127}$.
func TestValidRuleIDIsTheDocumentedGrammar(t *testing.T) {
	grammar := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	ids := []string{"", "a", "bash.rm-root", "effect.open_secret", ".x", "-x", "_x", "Bash.x", "a b", "a\n",
		"é", strings.Repeat("a", 128), strings.Repeat("a", 129), "9lives", "a/b"}
	for c := byte(0); c < 0x80; c++ {
		ids = append(ids, "a"+string(c), string(c))
	}
	for _, id := range ids {
		if got, want := validRuleID(id), grammar.MatchString(id); got != want {
			t.Errorf("%q: valid %v, want %v", id, got, want)
		}
	}
}

// A rule's doc is the comment lines at the margin right above it: a blank line starts over, an
// indented comment is the rule body's, and the embedded defaults read the same as an admin's file.
func TestRuleDocIsTheMarginCommentRightAboveIt(t *testing.T) {
	src := "# not this: a blank line follows\n\n# First line.\n  # indented, skipped\n#   Second line.  \nblock \"a.one\"\n  match x\n# For two,\n  match y\n# after a pattern.\nblock \"a.two\"\n  match z\nblock \"a.three\"\n  match w\n"
	want := map[string]string{"a.one": "First line. Second line.", "a.two": "For two, after a pattern.", "a.three": ""}
	for _, lazy := range []bool{false, true} {
		rules, err := parseRules(ruleParser{file: "t.rules", target: TargetBash, validators: validatorNames(), lists: map[string]bool{}, lazy: lazy}, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if got := r.Doc(); got != want[r.ID] {
				t.Errorf("lazy %v: %s's doc is %q, want %q", lazy, r.ID, got, want[r.ID])
			}
		}
	}
}
