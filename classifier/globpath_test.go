package classifier

import (
	"slices"
	"testing"
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
