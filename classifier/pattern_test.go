package classifier

import (
	"strings"
	"testing"
)

// The embedded rules, whose patterns the binary compiles only when a call needs them, parse as an
// admin's file does: every pattern compiles.
func TestEveryEmbeddedRulePatternCompiles(t *testing.T) {
	files, err := defaultRules.ReadDir("rules")
	if err != nil || len(files) < 7 {
		t.Fatalf("embedded rule files: %v (%d)", err, len(files))
	}
	for _, f := range files {
		data, _ := defaultRules.ReadFile("rules/" + f.Name())
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
	if p.String() == "" || p.Regexp() == nil || p.Regexp() != p.Regexp() {
		t.Fatalf("pattern %q: compiled %v, kept %v", p.String(), p.Regexp() != nil, p.Regexp() == p.Regexp())
	}
}
