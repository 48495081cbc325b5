package cbtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Init is what a program's package initialisation cost in one run, by GODEBUG=inittrace=1.
type Init struct {
	Allocs int     // objects allocated, summed over every package
	Millis float64 // clock time, summed over every package
	// Worst is the package that allocated the most, and Its allocations.
	Worst string
	Its   int
}

// BuildProgram builds the command in pkg (a folder, as go build takes it) as releases are built,
// without cgo, into a temporary folder, with the build tags given, and returns the path of a
// copy: a program run from where the linker wrote it starts measurably slower on Linux than a
// byte-identical copy, and no Mac runs the hook from there (a package installs a copy).
func BuildProgram(tb testing.TB, pkg, name string, tags ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	built := filepath.Join(dir, name+"-linked")
	args := []string{"build", "-o", built}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	build := exec.Command("go", append(args, pkg)...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return InstallCopy(tb, built, name)
}

// InstallCopy copies the program at path into a temporary folder as name and returns the copy's
// path: programs compared are run from copies alike (see BuildProgram).
func InstallCopy(tb testing.TB, path, name string) string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	installed := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(installed, data, 0o755); err != nil {
		tb.Fatal(err)
	}
	return installed
}

// InitTrace runs argv with GODEBUG=inittrace=1 (and env, when given) and sums what it reports.
// The program must exit 0.
func InitTrace(tb testing.TB, env []string, argv ...string) Init {
	tb.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	var in Init
	for line := range strings.Lines(stderr.String()) {
		// init <package> @<t> ms, <clock> ms clock, <bytes> bytes, <allocs> allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		n, err := strconv.Atoi(f[9])
		ms, merr := strconv.ParseFloat(f[4], 64)
		if err != nil || merr != nil {
			tb.Fatalf("inittrace line %q: %v %v", line, err, merr)
		}
		in.Allocs += n
		in.Millis += ms
		if n > in.Its {
			in.Worst, in.Its = f[1], n
		}
	}
	if in.Allocs == 0 {
		tb.Fatalf("GODEBUG=inittrace=1 reported nothing for %s:\n%s", argv[0], stderr.String())
	}
	return in
}

// InitWithin builds the command in pkg as releases are built and fails tb when its package
// initialisation allocates more than budget objects: what is built at start-up is paid by every
// process, and a hook program is a process per tool call. Allocations, not time, make the
// budget: they are the same on every machine, where the clock is not.
func InitWithin(tb testing.TB, pkg, name string, budget int) {
	tb.Helper()
	in := InitTrace(tb, nil, BuildProgram(tb, pkg, name), "--version")
	if in.Allocs > budget {
		tb.Errorf("%s's package init allocates %d objects, over the budget of %d (the most: %s, %d): build what a call may not need on first use (internal/lazy, lazyregexp), and link nothing the program does not run", name, in.Allocs, budget, in.Worst, in.Its)
	}
	tb.Logf("%s's package init: %d allocations (budget %d); the most: %s, %d", name, in.Allocs, budget, in.Worst, in.Its)
}
