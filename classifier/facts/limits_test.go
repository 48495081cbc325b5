package facts

import "testing"

func TestOrdinaryVariablesStayWithinTheLimits(t *testing.T) {
	an := Analyze(`dir=build; out=$dir/out; mkdir -p "$out" && cp -r src "$out/"`)
	if an.Exceeded != "" {
		t.Fatalf("an ordinary command hit a limit: %s", an.Exceeded)
	}
	if got := an.Commands[len(an.Commands)-1].Line(); got != "cp -r src build/out/" {
		t.Errorf("last command %q", got)
	}
}
