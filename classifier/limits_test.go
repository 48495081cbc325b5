package classifier

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// doubling is the 349-byte attack: a value doubled 40 times is a terabyte if expanded.
func doubling(n int) string {
	var b strings.Builder
	b.WriteString("a=xxxxxxxx; ")
	for range n {
		b.WriteString("a=$a$a; ")
	}
	b.WriteString("rm -rf / $a")
	return b.String()
}

// functionChain defines n functions each calling the next, and calls each one.
func functionChain(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "f%d(){ f%d; }; ", i, i+1)
	}
	for i := range n {
		fmt.Fprintf(&b, "f%d; ", i)
	}
	return b.String()
}

func TestCommandsBuiltToExhaustTheAnalyserAreDeniedWithBoundedMemory(t *testing.T) {
	c := newTestClassifier(t, Policy{})
	cases := map[string]string{
		"doubling":              doubling(40),
		"doubling in sh -c":     "sh -c '" + doubling(40) + "'",
		"doubling by export":    strings.ReplaceAll(doubling(40), "a=$a$a", "export a=$a$a"),
		"many commands":         strings.Repeat("true;", 5000) + "rm -rf /",
		"doubling in a heredoc": "bash <<'E'\n" + doubling(40) + "\nE",
		"many functions":        functionChain(1500) + "rm -rf /",
		"many descriptors":      strings.Repeat("exec {fd}<<<'x'; ", 2000) + "rm -rf /",
		"many staging steps":    strings.Repeat("cp .env a; cp a b; ", 1500) + "rm -rf /",
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			v := c.Evaluate(context.Background(), bashCall(cmd))
			runtime.ReadMemStats(&after)
			if v.Decision != claudehook.Deny {
				t.Fatalf("verdict %+v, want a deny", v)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
				t.Errorf("evaluation allocated %d MiB; the analysis limits should bound it far lower", grew>>20)
			}
		})
	}
}

func TestOrdinaryVariablesStayWithinTheLimits(t *testing.T) {
	an := Analyze(`dir=build; out=$dir/out; mkdir -p "$out" && cp -r src "$out/"`)
	if an.Exceeded != "" {
		t.Fatalf("an ordinary command hit a limit: %s", an.Exceeded)
	}
	if got := an.Commands[len(an.Commands)-1].Line(); got != "cp -r src build/out/" {
		t.Errorf("last command %q", got)
	}
}
