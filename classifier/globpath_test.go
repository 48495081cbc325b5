package classifier

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// A path rule's expression names its places from its start; those are what a globbed path is
// compared with. An expression that is not anchored, or whose start repeats, names none.
func TestPatternPathsListThePlacesAPathRuleNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`(?i)^~/\.(ssh|aws)(/|$)`, []string{"~/.ssh", "~/.aws"}},
		{`(?i)^~/Library/Keychains(/|$)`, []string{"~/library/keychains"}},
		{`^/etc/(passwd|shadow)$`, []string{"/etc/passwd", "/etc/shadow"}},
		{`^~/\.config/[a-z]+/token`, []string{"~/.config"}},
		{`(^|/)\.env$`, nil},
		{`^.*secret`, nil},
		{`^~/\.n[pe]trc$`, []string{"~/.netrc", "~/.nptrc"}},
	}
	for _, tt := range tests {
		if got := patternPaths(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("patternPaths(%s) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// An expression with more names than the bound is listed up to it, never without end.
func TestPatternPathsAreBounded(t *testing.T) {
	if got := patternPaths(`^/[a-h][a-h][a-h][a-h]/x`); len(got) > maxPatternPaths {
		t.Errorf("%d paths listed, bound %d", len(got), maxPatternPaths)
	}
}

// A shell on the machine follows links: with Where, a path a command names is judged where it
// leads too (k/notes, k a link to ~/.ssh); without it, as written. Paths in the VM get no Where.
func TestAShellPathIsJudgedWhereTheMachinesLinksLead(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	in, _ := json.Marshal(map[string]string{"command": "cat k/notes && cp a.txt k/copy"})
	p := claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: "/Users/ada/proj"}
	where := func(path string) (string, bool) {
		if rest, ok := strings.CutPrefix(path, "~/proj/k/"); ok {
			return "/Users/ada/.ssh/" + rest, true
		}
		return path, false
	}
	if v := c.EvaluateCall(context.Background(), Call{Payload: p}); v.Decision != claudehook.Allow {
		t.Fatalf("as written: %+v, want allow", v)
	}
	v := c.EvaluateCall(context.Background(), Call{Payload: p, Where: where})
	if v.Decision != claudehook.Deny || v.RuleID != "read.secrets" || !strings.Contains(v.Reason, "~/.ssh/notes") {
		t.Errorf("through the link: %+v, want read.secrets naming ~/.ssh/notes", v)
	}
}
