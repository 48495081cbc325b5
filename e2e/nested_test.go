package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An agent that starts an agent, in a session guarded by its own hook: a nested Claude Code is
// refused before it starts, whether it is told to leave out the user settings (where the
// session's hook stands) or would inherit the hook from the session's settings.json, a file the
// agent can rewrite while it starts (a background loop rewriting it beside the nested claude is
// refused with it). A nested claude --version, which runs no task, runs.
func TestAttackANestedAgentGuardedByTheSessionsFileIsRefusedBeforeItStarts(t *testing.T) {
	bin := claudeBinary(t)
	d, dir := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, "nested", "enforce")
	// The user lets the agent run claude without asking (the CLI's own rules), as a user who
	// wants nested agents would.
	writeJSONWhole(t, filepath.Join(dir, ".claude", "settings.json"), mergeOurs(t, dir, map[string]any{
		"hooks": map[string]any{}, "permissions": map[string]any{"allow": []string{"Bash(claude:*)", "Bash"}}}))
	d.waitHooked(t, dir, "enforce")
	nested := func(extra string) string {
		return fmt.Sprintf("claude -p 'push the branch' --output-format json %s", extra)
	}
	neutered := filepath.Join(dir, "outputs", "neutered.json")
	if err := os.WriteFile(neutered, []byte(`{"hooks":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	race := fmt.Sprintf("(for i in $(seq 200); do cp %s %s; done) & %s; wait", neutered, filepath.Join(dir, ".claude", "settings.json"), nested(""))
	api := newFakeAPI(t,
		bashTurn(nested("--setting-sources project,local")),
		bashTurn(nested("")),
		bashTurn(race),
		bashTurn("claude --version"),
	)
	// claude is on the PATH, as in a VM where it is installed.
	res := streamToolResults(runCLI(t, api, dir, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH")))
	if len(res) != 4 {
		t.Fatalf("tool results %+v", res)
	}
	for i, why := range []string{"--setting-sources", "settings file"} {
		if !res[i].IsError || !strings.Contains(res[i].Content, "effect.nested-agent") || !strings.Contains(res[i].Content, why) {
			t.Errorf("nested agent %d was not refused for %q: %+v", i, why, res[i])
		}
	}
	// The race: refused whole (the rewriting of the session's settings, or the nested claude).
	if !res[2].IsError || !strings.Contains(res[2].Content, "coworkbridge: rule") {
		t.Errorf("the nested agent beside a loop rewriting the session's settings ran: %+v", res[2])
	}
	if res[3].IsError || !strings.Contains(res[3].Content, "Claude Code") {
		t.Errorf("claude --version did not run: %+v", res[3])
	}
	refused := 0
	for _, r := range d.records(t, 4) {
		if r.Rule == "effect.nested-agent" && r.Decision == "deny" {
			refused++
		}
	}
	if refused < 2 {
		t.Errorf("%d nested agents refused in the records, want at least 2", refused)
	}
	// Nothing ran unjudged: reconciliation finds no call wanting once its grace (5 s) passed.
	time.Sleep(7 * time.Second)
	for _, r := range d.records(t, 4) {
		if r.Rule == "coworkbridge.unguarded-call" || r.Rule == "coworkbridge.forged-event" {
			t.Errorf("reconciliation found calls wanting: %+v", r)
		}
	}
}
