package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkRealCLIEnforceOverhead is what enforce mode adds to a tool call as the user sees it:
// the real CLI's wall time for a one-call turn in a session guarded by the real daemon, minus
// the same in a session without our hook, medians over 20 runs each.
//
//	go test -run x -bench RealCLIEnforceOverhead -benchtime 1x ./e2e
func BenchmarkRealCLIEnforceOverhead(b *testing.B) {
	claudeBinary(b)
	d := startDaemon(b, buildCoworkbridge(b), `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	guarded := newCoworkSession(b, d.root, "ovh1")
	d.waitHooked(b, guarded, "enforce")
	bare := newCoworkSession(b, b.TempDir(), "ovh2") // outside the daemon's root: no hook
	// A hook that does nothing separates the CLI's own cost of running any hook from ours.
	trivial := newCoworkSession(b, b.TempDir(), "ovh3")
	os.WriteFile(filepath.Join(trivial, ".claude", "settings.json"),
		[]byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"exit 0","timeout":30}]}]}}`), 0o644)
	call := []toolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "nothing"}}}
	median := func(dir string) time.Duration {
		var took []time.Duration
		for range 20 {
			took = append(took, runCLI(b, newFakeAPI(b, call), dir).Elapsed)
		}
		slices.Sort(took)
		return took[len(took)/2]
	}
	for b.Loop() {
		with, without, empty := median(guarded), median(bare), median(trivial)
		b.ReportMetric(float64(with.Microseconds())/1000, "with-hook-ms")
		b.ReportMetric(float64(without.Microseconds())/1000, "without-ms")
		b.ReportMetric(float64(empty.Microseconds())/1000, "trivial-hook-ms")
		b.ReportMetric(float64((with-without).Microseconds())/1000, "overhead-ms")
	}
}
