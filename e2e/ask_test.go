package e2e

import (
	"strings"
	"testing"
)

// An ask verdict reaches the CLI as an ask, not as a deny or an allow. Headless (-p) nobody can
// answer, so the CLI rejects it as a person would; under Cowork the desktop app asks the user.
// The CLI's record tells the two apart: a hook deny is "permission-rule" with source "hook" and
// a "hook error" message; an ask is "user-rejected", with our reason as the question.
func TestAskVerdictReachesTheCLIAsAsk(t *testing.T) {
	d, dir := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, "ask1", "enforce")
	run := runCLI(t, newFakeAPI(t, []toolUse{{Name: "Bash", Input: map[string]any{"command": "git restore src/app.ts", "description": "discard"}}}), dir)
	res := streamToolResults(run)
	if len(res) != 1 || !res[0].IsError || !strings.HasPrefix(res[0].Content, "coworkbridge: rule bash.git-discard") ||
		strings.Contains(res[0].Content, "hook error") {
		t.Errorf("tool results %+v", res)
	}
	kinds := nonExecutionKinds(run)
	if len(kinds) != 1 || kinds[0] != "user-rejected" {
		t.Errorf("non_execution_kind %v, want [user-rejected] (an ask nobody answered)", kinds)
	}
	if recs := d.records(t, 1); recs[0].Decision != "ask" || recs[0].Rule != "bash.git-discard" || !recs[0].Enforced {
		t.Errorf("record %+v", recs[0])
	}
}

func nonExecutionKinds(run cliRun) []string {
	var out []string
	for _, rec := range run.Records {
		metas, _ := rec["tool_result_meta"].([]any)
		for _, m := range metas {
			if mm, ok := m.(map[string]any); ok {
				if k, ok := mm["non_execution_kind"].(string); ok {
					out = append(out, k)
				}
			}
		}
	}
	return out
}
