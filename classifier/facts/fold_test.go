package facts

import "testing"

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
