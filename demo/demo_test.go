package demo

import (
	"context"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

func TestEveryScriptedCallGetsWhatThePolicyAndTheModeSay(t *testing.T) {
	for _, mode := range []managedconfig.Mode{managedconfig.Enforce, managedconfig.Observe} {
		t.Run(string(mode), func(t *testing.T) {
			w, err := NewWorld(t.TempDir(), mode)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, stop, err := w.Start(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if err := w.WaitHooked(ctx, 15*time.Second); err != nil {
				t.Fatal(err)
			}
			denied := 0
			for i, c := range Script() {
				res, err := w.Play(ctx, c)
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				if !w.Expected(c, res) {
					t.Errorf("call %d (%s %s): answer %s, verdict %s (%s); want %s", i+1, c.Tool, c.Summary(), res.Answer, res.Verdict, res.Rule, c.Want)
				}
				if res.Answer == claudehook.Deny {
					denied++
				}
			}
			if mode == managedconfig.Observe && denied != 0 {
				t.Errorf("observe mode denied %d calls", denied)
			}
		})
	}
}

func TestExpectedRejectsAWrongAnswerOrVerdict(t *testing.T) {
	deny := Call{Want: claudehook.Deny}
	enforce, observe := &World{Mode: managedconfig.Enforce}, &World{Mode: managedconfig.Observe}
	tests := []struct {
		w    *World
		r    Result
		want bool
	}{
		{enforce, Result{Answer: claudehook.Deny, Verdict: "deny"}, true},
		{enforce, Result{Answer: claudehook.Allow, Verdict: "deny"}, false}, // not enforced
		{enforce, Result{Answer: claudehook.Deny, Verdict: "ask"}, false},
		{observe, Result{Answer: claudehook.Allow, Verdict: "deny"}, true},
		{observe, Result{Answer: claudehook.Deny, Verdict: "deny"}, false}, // observe never answers
	}
	for i, tt := range tests {
		if got := tt.w.Expected(deny, tt.r); got != tt.want {
			t.Errorf("%d: Expected = %v, want %v", i, got, tt.want)
		}
	}
}
