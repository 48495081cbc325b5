package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/telemetry"
)

// transcriptOf finds the CLI's transcript in the session (.claude/projects/<slug>/<id>.jsonl).
func transcriptOf(t *testing.T, dir string) string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(dir, ".claude", "projects", "*", "*.jsonl"))
	if len(found) != 1 {
		t.Fatalf("transcripts in the session: %v", found)
	}
	return found[0]
}

// waitFinding waits for a record of one of rules in the decision log and returns the rules seen.
func waitFinding(t *testing.T, d *daemon, within time.Duration, rules ...string) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		recs, _ := telemetry.ReadFile(d.logPath)
		var seen []string
		for _, r := range recs {
			seen = append(seen, r.Rule)
			for _, want := range rules {
				if r.Rule == want {
					return seen
				}
			}
		}
		if time.Now().After(deadline) {
			return seen
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// After a call ran unguarded, the agent hides it from the transcript at once: renaming the file,
// or rewriting the call's result in place as an error. Either is found (an unguarded call, or the
// transcript tampered with), with the real CLI writing the transcript.
func TestAttackHidingAnUnguardedCallInTheTranscriptIsFound(t *testing.T) {
	hides := map[string]func(t *testing.T, path string){
		"renamed": func(t *testing.T, path string) {
			if err := os.Rename(path, filepath.Join(filepath.Dir(path), "elsewhere.jsonl")); err != nil {
				t.Fatal(err)
			}
		},
		"result rewritten as an error": func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out [][]byte
			for line := range bytes.Lines(data) {
				if bytes.Contains(line, []byte(`"tool_result"`)) {
					line = bytes.Replace(line, []byte(`"is_error":false`), []byte(`"is_error":true`), 1)
				}
				out = append(out, line)
			}
			if err := os.WriteFile(path, bytes.Join(out, nil), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, hide := range hides {
		t.Run(name, func(t *testing.T) {
			d, dir := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","rescan_interval":"1s"}`, "hide1", "enforce")
			api := newFakeAPI(t, []toolUse{{Name: "Bash", Input: map[string]any{"command": "touch pwned", "description": "touch"}}})
			res := streamToolResults(runCLIAs(t, api, dir, nil, []string{"--settings", `{"disableAllHooks":true}`}))
			if len(res) != 1 || res[0].IsError {
				t.Fatalf("the bypass did not work, so this test proves nothing: %+v", res)
			}
			hide(t, transcriptOf(t, dir))
			seen := waitFinding(t, d, 15*time.Second, "coworkbridge.unguarded-call", "coworkbridge.transcript-tampered")
			if !strings.Contains(strings.Join(seen, " "), "coworkbridge.") {
				t.Fatalf("the hidden call left no finding; records: %v", seen)
			}
			t.Logf("found as: %v", seen)
		})
	}
}
