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

// A bare name a reading program is given is a path in the folder the command runs in: where the
// machine's links, or a second name of a protected file, take it is judged too (cat hard.txt,
// where hard.txt is a hard link to a key). LinkPaths lists, for a door in another process, the
// same paths Where is asked about; in the VM, a file tool's path is asked about as well.
func TestABareNameReadIsJudgedWhereItLeadsAndLinkPathsListsWhatWhereIsAsked(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	bash := func(cmd, cwd string) claudehook.Payload {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: cwd}
	}
	var asked []string
	where := func(path string) (string, bool) {
		asked = append(asked, path)
		if path == "/Users/ada/proj/hard.txt" || path == "/sessions/s/mnt/outputs/hard.txt" {
			return "/Users/ada/.ssh/notes", true
		}
		return path, false
	}
	p := bash("cat hard.txt README.md && cd sub && head -n 3 notes", "/Users/ada/proj")
	if v := c.EvaluateCall(context.Background(), Call{Payload: p}); v.Decision != claudehook.Allow {
		t.Fatalf("as written: %+v, want allow", v)
	}
	v := c.EvaluateCall(context.Background(), Call{Payload: p, Where: where})
	if v.Decision != claudehook.Deny || v.RuleID != "read.secrets" {
		t.Errorf("a bare name that is a second name of a key: %+v", v)
	}
	want := []string{"/Users/ada/proj/hard.txt", "/Users/ada/proj/README.md", "~/proj/sub/notes"}
	if got := c.LinkPaths(p); !slices.Equal(got, want) {
		t.Errorf("LinkPaths = %q, want %q", got, want)
	}
	if !slices.Equal(asked, want) {
		t.Errorf("Where was asked %q, LinkPaths lists %q", asked, want)
	}
	in, _ := json.Marshal(map[string]string{"file_path": "/sessions/s/mnt/outputs/hard.txt"})
	read := claudehook.Payload{ToolName: "Read", ToolInput: in, Cwd: "/sessions/s/mnt/outputs"}
	if v := c.EvaluateCall(context.Background(), Call{Payload: read, Where: where, InVM: true}); v.Decision != claudehook.Deny {
		t.Errorf("a Read in the VM of a second name of a key: %+v", v)
	}
	if got := c.LinkPaths(read); got != nil {
		t.Errorf("LinkPaths of a file tool: %q (its door resolves it)", got)
	}
}

func TestSecretFoldersAreTheReadRulesFoldersAndNoBroadOnes(t *testing.T) {
	got := newTestClassifier(t, Policy{}).SecretFolders()
	for _, want := range []string{"~/.ssh", "~/.aws", "~/.gnupg", "~/.netrc"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not among %q", want, got)
		}
	}
	for _, broad := range []string{"~/.config", "~/Library", "~"} {
		if slices.Contains(got, broad) {
			t.Errorf("%s, too broad to search, is among %q", broad, got)
		}
	}
}
