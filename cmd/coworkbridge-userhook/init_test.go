package main

import (
	"os"
	"slices"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// BenchmarkInitAgainstReference is the program's package initialisation against another
// program's, in one run, a run of each in turn: the clock time of a start-up varies several
// times over between days on the same machine, so a figure in milliseconds is read beside a
// reference measured with it, both run from copies. COWORKBRIDGE_INIT_REFERENCE names the reference, built as releases
// are built; issue 69's goals were set against the release it measured, d1d97c6, whose per-user
// hook was the whole binary:
//
//	git worktree add /tmp/ref d1d97c6 && (cd /tmp/ref && CGO_ENABLED=0 go build -o /tmp/ref.bin ./cmd/coworkbridge)
//	COWORKBRIDGE_INIT_REFERENCE=/tmp/ref.bin go test ./cmd/coworkbridge-userhook -run x -bench InitAgainstReference -benchtime 100x
//
// It reports both medians and their ratio (ref-x): issue 69 measured the reference's at 1.6-1.9
// ms on its machine, so the goal of 1.0 ms there is a ratio of at most 0.53-0.63.
func BenchmarkInitAgainstReference(b *testing.B) {
	ref := os.Getenv("COWORKBRIDGE_INIT_REFERENCE")
	if ref == "" {
		b.Skip("COWORKBRIDGE_INIT_REFERENCE names no reference program")
	}
	prog := cbtest.BuildProgram(b, ".", "coworkbridge-userhook", "coworkbridge_dev")
	ref = cbtest.InstallCopy(b, ref, "reference")
	var ours, theirs []float64
	for b.Loop() {
		theirs = append(theirs, cbtest.InitTrace(b, nil, ref, "--version").Millis)
		ours = append(ours, cbtest.InitTrace(b, nil, prog, "--version").Millis)
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	o, r := median(ours), median(theirs)
	b.ReportMetric(o, "init-ms")
	b.ReportMetric(r, "ref-init-ms")
	b.ReportMetric(o/r, "ref-x")
}
