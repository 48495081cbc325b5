package classifier

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier/facts"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

func judgeBash(t *testing.T, c *Classifier, cmd string) Verdict {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return c.Evaluate(context.Background(), claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: "/Users/ada/project"})
}

// Values a command makes for itself are folded, so the rule sees what the shell runs; each
// attack has a look-alike that folds to something harmless and must pass.
func TestConstantFoldingShowsWhatTheShellRuns(t *testing.T) {
	c, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmd, lookAlike string
	}{
		{`rm -rf $(echo /)`, `ls $(echo src)`},
		{"rm -rf `echo ~`", "ls `echo src`"},
		{`$(printf "\x72\x6d") -rf ~`, `$(printf "\x6c\x73") -la`},
		{`$(printf '%s' rm) -rf ~`, `$(printf '%s' ls) -la`},
		{`$(echo -e "\0162\0155") -rf ~`, `$(echo -e "\0154\0163")`},
		{`/bin/r? -rf ~`, `/bin/l? -la`},
		{`/???/?m -rf ~`, `/???/?s -la`},
		{`IFS=,;x=rm,-rf,~;$x`, `IFS=,;x=ls,-la;$x`},
		{`alias x="rm -rf"; x ~`, `alias x="ls -la"; x src`},
		{`f(){ rm -rf "$1"; }; f ~`, `f(){ ls "$1"; }; f src`},
		{`env -S "rm -rf ~"`, `env -S "ls -la"`},
		{`busybox rm -rf ~`, `busybox ls -la`},
		{`x=$(echo cm0gLXJmIH4= | base64 -d); $x`, `x=$(echo bHMgLWxh | base64 -d); $x`},
		{`$(echo 726d | xxd -r -p) -rf ~`, `$(echo 6c73 | xxd -r -p) -la`},
		{`$(echo mr | rev) -rf ~`, `$(echo sl | rev) -la`},
	}
	for _, tt := range tests {
		if v := judgeBash(t, c, tt.cmd); v.Decision != claudehook.Deny {
			t.Errorf("%s: %s (%s), want deny", tt.cmd, v.Decision, v.RuleID)
		}
		if v := judgeBash(t, c, tt.lookAlike); v.Decision != claudehook.Allow {
			t.Errorf("look-alike %s: %s (%s %s), want allow", tt.lookAlike, v.Decision, v.RuleID, v.Matched)
		}
	}
}

func TestPrintfAndEscapes(t *testing.T) {
	for _, tt := range []struct {
		format string
		args   []string
		want   string
	}{
		{`\x72\x6d`, nil, "rm"},
		{`%s-%s\n`, []string{"a", "b", "c"}, "a-b\nc-\n"},
		{`%b`, []string{`\0162m`}, "rm"},
		{`%c%c`, []string{"rx", "my"}, "rm"},
		{`\101\t`, nil, "A\t"},
	} {
		if got, ok := facts.PrintfOutput(tt.format, tt.args); !ok || got != tt.want {
			t.Errorf("printf %q %q = %q, %v; want %q", tt.format, tt.args, got, ok, tt.want)
		}
	}
	if _, ok := facts.PrintfOutput(`%5.2f`, []string{"1"}); ok {
		t.Error("a float format was folded")
	}
}

func FuzzFold(f *testing.F) {
	for _, s := range []string{`$(printf "\x72\x6d") -rf ~`, `x=$(echo cm0= | base64 -d); $x`, `$(echo -e "\0162")`, `/???/?m`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a := facts.Analyze(cmd)
		if a.Expanded > facts.MaxExpandBytes+facts.MaxValueBytes*2 {
			t.Fatalf("expansion unbounded: %d bytes", a.Expanded)
		}
	})
}

func TestCanonPathWritesEveryHomeAsTilde(t *testing.T) {
	tests := map[string]string{
		"/Users/ada/.ssh/id_rsa": "~/.ssh/id_rsa", "/Users/ada": "~", "/home/bob/x": "~/x", "/root/.aws": "~/.aws",
		"/var/root": "~", "$HOME/.env": "~/.env", "${HOME}": "~", "~ada/.zshrc": "~/.zshrc", "~/x": "~/x",
		"/Users/": "/Users", "/rootkit/x": "/rootkit/x", "/home": "/home", "~Ada/x": "~Ada/x", "/Usersx/a": "/Usersx/a",
	}
	for in, want := range tests {
		if got := facts.CanonPath(in, "/tmp"); got != want {
			t.Errorf("canonPath(%q) = %q, want %q", in, got, want)
		}
	}
}
