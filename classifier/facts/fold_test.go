package facts

import (
	"strings"
	"testing"
)

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
		if got, ok := printfOutput(tt.format, tt.args); !ok || got != tt.want {
			t.Errorf("printf %q %q = %q, %v; want %q", tt.format, tt.args, got, ok, tt.want)
		}
	}
	if _, ok := printfOutput(`%5.2f`, []string{"1"}); ok {
		t.Error("a float format was folded")
	}
}

func FuzzFold(f *testing.F) {
	for _, s := range []string{`$(printf "\x72\x6d") -rf ~`, `x=$(echo cm0= | base64 -d); $x`, `$(echo -e "\0162")`, `/???/?m`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a := Analyze(cmd)
		if a.expanded > maxExpandBytes+maxValueBytes*2 {
			t.Fatalf("expansion unbounded: %d bytes", a.expanded)
		}
	})
}

// Code handed to an interpreter is the agent's text: folding its literals never panics, never
// grows it, and leaves code with nothing to fold as it was.
func FuzzJoinLiterals(f *testing.F) {
	for _, s := range []string{`["cl" "aude", "-p"]`, `"edualc"[::-1]`, `"".join(["a", 'b'])`, `['a','b'].join("")`,
		`'a' + "b" + 'c'`, `os.system("echo 'a' 'b'")`, `("'" "\"")`, `print(1)`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		out := joinLiterals(code)
		if len(out) > len(code) {
			t.Fatalf("joinLiterals(%q) = %q, longer", code, out)
		}
		if !strings.ContainsAny(code, `'"`) && out != code {
			t.Fatalf("joinLiterals(%q) = %q, with no literal to fold", code, out)
		}
	})
}
