package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/machine"
)

// initAllocBudget bounds what the program's package initialisation allocates, summed over every
// package: it is paid on every tool call of every session on the Mac. 297 at the time of writing,
// where the whole binary's is 750: the schema validator (about 300), html/template, the daemon's
// packages, network code and the file watcher are not linked. Of the 297, mvdan.cc/sh's are 174
// (its packages compile four expressions at start-up) and this module's 8: its tables are laid
// out in the binary (internal/lazy, internal/lazyregexp, internal/nameset), where they were 81
// while each was a sync.OnceValue made at start-up.
const initAllocBudget = 320

func TestPackageInitStaysWithinItsAllocationBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	cbtest.InitWithin(t, ".", "coworkbridge-userhook", initAllocBudget)
}

// The hook program links no more than the hook: a package that brings a validator, a template
// engine, network code, a file watcher or the daemon into it is paid on every tool call (each
// package's initialisation runs whether or not the call uses it).
func TestTheProgramLinksNeitherTheDaemonNorAValidatorNorNetworkCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	banned := []string{"jsonschema", "html/template", "/daemon", "/injector", "/collector", "/privsep", "/report", "/installer", "lmittmann/tint",
		"/hostsocket", "/fswatch", "fsnotify", "/metronome", "/managedconfig/watch"}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net" || strings.HasPrefix(pkg, "net/http") || slices.ContainsFunc(banned, func(b string) bool { return strings.Contains(pkg, b) }) {
			t.Errorf("coworkbridge-userhook links %s", pkg)
		}
	}
}

// enforcing is a Mac whose managed.json switches coworkbridge on in enforce, and the hook's
// environment there (the development overrides name its folders).
func enforcing(t *testing.T) (*machine.Machine, []string) {
	t.Helper()
	h, err := machine.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.WriteConfig(`{"version":1,"cowork_enabled":true,"mode":"enforce"}`); err != nil {
		t.Fatal(err)
	}
	return h, h.Environ("HOME=" + h.Dir)
}

type run struct{ out, errs string }

func runHook(t *testing.T, bin string, env []string, payload string, args ...string) run {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdin = env, strings.NewReader(payload)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v (it must always exit 0: Claude Code lets the call through on another status)\n%s", bin, args, err, errs.String())
	}
	return run{out.String(), errs.String()}
}

const (
	push   = `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"}}`
	status = `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}`
)

// The program is `coworkbridge hook`: the call judged under the managed policy, recorded, and a
// deny printed; whatever its arguments, it answers.
func TestTheProgramJudgesAndRecordsEachCall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	bin := cbtest.BuildProgram(t, ".", "coworkbridge-userhook", "coworkbridge_dev")
	h, env := enforcing(t)
	for _, tc := range []struct {
		name, payload string
		args          []string
		want, note    string
	}{
		{"a dangerous call", push, []string{"--per-user"}, "bash.git-push-force", ""},
		{"a harmless call", status, []string{"--per-user"}, "", ""},
		{"no argument", push, nil, "bash.git-push-force", ""},
		{"an argument it does not know", push, []string{"--system"}, "bash.git-push-force", "usage:"},
		{"no payload", "", []string{"--per-user"}, `"deny"`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runHook(t, bin, env, tc.payload, tc.args...)
			if tc.want == "" && r.out != "" || !strings.Contains(r.out, tc.want) {
				t.Errorf("printed %q, want %q", r.out, tc.want)
			}
			if !strings.Contains(r.errs, tc.note) {
				t.Errorf("stderr %q, want %q", r.errs, tc.note)
			}
		})
	}
	data, err := os.ReadFile(h.DecisionLog())
	if n := strings.Count(string(data), `"decision":"deny","rule":"bash.git-push-force"`); err != nil || n != 3 {
		t.Errorf("%d denies of the rule recorded in %s (%v), want the three:\n%s", n, h.DecisionLog(), err, data)
	}
}

// A release build ignores the COWORKBRIDGE_* overrides: the hook's environment is partly the
// session's to choose (its settings' env), and an override could hand it a policy of the
// agent's making. Under a development build the same environment turns the guard on.
func TestAReleaseBuildIgnoresTheDevelopmentOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	_, env := enforcing(t)
	if r := runHook(t, cbtest.BuildProgram(t, ".", "coworkbridge-userhook", "coworkbridge_dev"), env, push); !strings.Contains(r.out, "deny") {
		t.Fatalf("a development build did not deny under the overrides' policy: %q", r.out)
	}
	r := runHook(t, cbtest.BuildProgram(t, ".", "coworkbridge-userhook"), env, push)
	if strings.Contains(r.out, "bash.git-push-force") {
		t.Errorf("a release build judged by the policy an override named: %q", r.out)
	}
}

func TestVersionNamesTheProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	bin := cbtest.BuildProgram(t, ".", "coworkbridge-userhook")
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "coworkbridge-userhook ") {
		t.Errorf("--version: %q %v", out, err)
	}
}
