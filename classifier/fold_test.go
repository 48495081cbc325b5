package classifier

import (
	"context"
	"encoding/json"
	"testing"

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
