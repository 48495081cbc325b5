package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// initAllocBudget bounds what package initialisation allocates in the released binary, summed
// over every package: what is built at start-up is paid by every hook process, on every tool
// call, so rule tables, secret detectors and schemas are built when first used. Allocations, not
// time, make the budget: they are the same on every machine, where the clock (BenchmarkHookProcess
// reports init-ms) is not. 816 at the time of writing (891 before the allow list's sets became
// namesets and the cloud table's closures plain values): 2,094 before a lazy expression cost
// nothing at start-up (laid out in the binary, where it cost two allocations each, 358 of them),
// the last eagerly compiled ones and the transcript's default hashes were made lazy, and the
// tables' sets of names became internal/nameset's (laid out in the binary, not hashed), and their
// other maps are made on first use. Of what is left, about 560 are other modules' (jsonschema,
// mvdan.cc/sh, html/template).
const initAllocBudget = 850

func TestPackageInitStaysWithinItsAllocationBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "coworkbridge")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	total, worst, worstPkg := 0, 0, ""
	for line := range strings.Lines(stderr.String()) {
		// init <package> @<t> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", line, err)
		}
		total += n
		if n > worst {
			worst, worstPkg = n, f[1]
		}
	}
	if total == 0 {
		t.Fatalf("GODEBUG=inittrace=1 reported nothing:\n%s", stderr.String())
	}
	if total > initAllocBudget {
		t.Errorf("package init allocates %d objects, over the budget of %d (the most: %s, %d): build what the call may not need on first use (sync.OnceValue, lazyregexp)", total, initAllocBudget, worstPkg, worst)
	}
	t.Logf("package init: %d allocations (budget %d); the most: %s, %d", total, initAllocBudget, worstPkg, worst)
}
