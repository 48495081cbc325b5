package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

func judge(t *testing.T, c *classifier.Classifier, cmd string) claudehook.Decision {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return c.Evaluate(context.Background(), claudehook.Payload{ToolName: "Bash", ToolInput: in, Cwd: "/p"}).Decision
}

func rulesDir(t *testing.T, rules string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "org-bash.rules"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A broken change never leaves the daemon without rules: each step says what runs instead.
func TestTheKeeperKeepsTheLastGoodPolicyThroughBrokenChanges(t *testing.T) {
	good := rulesDir(t, "block \"org.no-make\"\n  match ^make\\b\n")
	broken := rulesDir(t, "block \"org.bad\"\n  match ([\n")
	var k Keeper

	// Broken from the start: the built-in rules run.
	res, err := k.Apply(managedconfig.Policy{RulesDirs: []string{broken}})
	if err != nil || res.Fallback != FallbackBuiltin || res.Problem == nil || judge(t, res.Classifier, "rm -rf /") != claudehook.Deny {
		t.Fatalf("broken first: %+v %v", res, err)
	}
	// A good policy: in force whole.
	res, _ = k.Apply(managedconfig.Policy{RulesDirs: []string{good}})
	if res.Fallback != "" || res.Problem != nil || judge(t, res.Classifier, "make all") != claudehook.Deny {
		t.Fatalf("good: %+v", res)
	}
	// Broken again: the previous good one stays, its own rule included.
	res, _ = k.Apply(managedconfig.Policy{RulesDirs: []string{broken}})
	if res.Fallback != FallbackPrevious || !strings.Contains(res.Problem.Error(), "org-bash.rules") || judge(t, res.Classifier, "make all") != claudehook.Deny {
		t.Fatalf("broken after good: %+v", res)
	}
	// A rules folder missing: the rest of the policy stands.
	res, _ = k.Apply(managedconfig.Policy{RulesDirs: []string{filepath.Join(t.TempDir(), "missing"), good}, AllowedExecutables: []string{"terraform"}})
	if res.Fallback != FallbackRest || res.Problem == nil || judge(t, res.Classifier, "terraform plan") != claudehook.Allow ||
		judge(t, res.Classifier, "make all") != claudehook.Deny {
		t.Fatalf("missing folder: %+v", res)
	}
}

// A notice for a rule that does not exist would never be shown: it is a problem of the policy,
// said with the rule meant.
func TestABlockMessageForAnUnknownRuleIsAPolicyProblem(t *testing.T) {
	_, err := Compile(managedconfig.Policy{Notices: managedconfig.Notices{Rules: map[string]managedconfig.Notice{
		"bash.rm-critcal":         {Text: "no"},
		"bash.rm-critical":        {Text: "no"},
		"coworkbridge.quarantine": {Text: "the daemon's own rules are taken as written"},
	}}})
	if err == nil || !strings.Contains(err.Error(), `block_message.rules names rule "bash.rm-critcal", which no rule file defines; did you mean "bash.rm-critical"?`) {
		t.Fatalf("Compile = %v", err)
	}
	if strings.Count(err.Error(), "names rule") != 1 {
		t.Errorf("only the unknown id is a problem: %v", err)
	}
}

// managedconfig and the classifier name the owners of places alike: a place whose owner the
// classifier does not know would protect nothing.
func TestTheClassifierKnowsEveryOwnerOfAPlace(t *testing.T) {
	known := []string{classifier.OwnerGuard, classifier.OwnerSessions, classifier.OwnerApp, classifier.OwnerManaged}
	for _, owner := range []string{managedconfig.OwnerGuard, managedconfig.OwnerSessions, managedconfig.OwnerApp, managedconfig.OwnerManaged} {
		if !slices.Contains(known, owner) {
			t.Errorf("owner %q of managedconfig is not one the classifier judges", owner)
		}
	}
}

// A user's check or rules, while managed.json is broken, judges with the last good copy a
// system-mode daemon runs on, where the user can read it (where only root can, the error says to
// run the command with sudo: not testable as root).
func TestAUsersCommandUsesTheSystemDaemonsLastGoodCopy(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	managed := filepath.Join(dir, "managed.json")
	vars := map[string]string{managedconfig.EnvManagedConfig: managed, managedconfig.EnvStateDir: state}
	env := managedconfig.Env{GOOS: "linux", Home: filepath.Join(dir, "home"), Getenv: func(k string) string { return vars[k] }}
	sys := env
	sys.System = true
	paths, err := sys.Paths()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(paths.LastGoodFile(), []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce"}`), 0o600)
	os.WriteFile(managed, []byte(`{"version":1,"mode":`), 0o644)
	s := managedconfig.Snapshot{Origin: managedconfig.OriginInvalid, Path: managed}
	got, note := systemLastGood(env, s)
	if got.Origin != managedconfig.OriginLastGood || got.Config.Mode != managedconfig.Enforce || note != "" {
		t.Errorf("snapshot %+v, note %q: want the system daemon's last good copy", got.Origin, note)
	}
	os.Remove(paths.LastGoodFile())
	if got, _ := systemLastGood(env, s); got.Origin != managedconfig.OriginInvalid {
		t.Errorf("with no last good copy: %v, want the broken file's own state", got.Origin)
	}
}
