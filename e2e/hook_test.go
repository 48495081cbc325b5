package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/injector"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

func injectObserve(t *testing.T, dir string) {
	t.Helper()
	cfg := managedconfig.Config{Mode: managedconfig.Observe, HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second, MaxLineBytes: 4 << 20}
	e, err := hookentry.NewEntry(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := injector.Ensure(s, e, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
}

type spoolLine struct {
	V     int    `json:"v"`
	RID   string `json:"rid"`
	Mode  string `json:"mode"`
	Event struct {
		SessionID     string          `json:"session_id"`
		HookEventName string          `json:"hook_event_name"`
		ToolName      string          `json:"tool_name"`
		ToolInput     json.RawMessage `json:"tool_input"`
		ToolUseID     string          `json:"tool_use_id"`
		Cwd           string          `json:"cwd"`
	} `json:"event"`
}

func readSpool(t *testing.T, dir string) []spoolLine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".claude", "coworkbridge", "events.jsonl"))
	if err != nil {
		t.Fatalf("no spool: %v", err)
	}
	var lines []spoolLine
	for _, raw := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(raw) == 0 {
			continue // the fresh line each append starts with
		}
		var l spoolLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("spool line is not JSON: %v: %.300s", err, raw)
		}
		lines = append(lines, l)
	}
	return lines
}

// The injector's observe hook, written into a Cowork-like session, is run by the real CLI for
// every tool call, and the event lands in the spool intact while the calls go ahead.
func TestRealCLIRunsTheInjectedObserveHook(t *testing.T) {
	claudeBinary(t)
	dir := newCoworkSession(t, t.TempDir(), "e2e1")
	injectObserve(t, dir)
	target := filepath.Join(dir, "outputs", "note.txt")
	api := newFakeAPI(t,
		[]toolUse{{Name: "Bash", Input: map[string]any{"command": "echo 'multi\nline' && printf 'é\\t\"q\"'", "description": "say"}}},
		[]toolUse{{Name: "Write", Input: map[string]any{"file_path": target, "content": "hello\r\nworld\n"}}},
	)
	run := runCLI(t, api, dir)

	lines := readSpool(t, dir)
	if len(lines) != 2 {
		t.Fatalf("%d spool lines, want 2", len(lines))
	}
	if l := lines[0]; l.V != 1 || l.Mode != "observe" || len(l.RID) != 32 || l.Event.ToolName != "Bash" || l.Event.HookEventName != "PreToolUse" {
		t.Errorf("first line %+v", l)
	}
	var bash struct{ Command string }
	json.Unmarshal(lines[0].Event.ToolInput, &bash)
	if bash.Command != "echo 'multi\nline' && printf 'é\\t\"q\"'" {
		t.Errorf("command arrived as %q", bash.Command)
	}
	var write struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	json.Unmarshal(lines[1].Event.ToolInput, &write)
	if lines[1].Event.ToolName != "Write" || write.FilePath != target || write.Content != "hello\r\nworld\n" {
		t.Errorf("write arrived as %s %+v", lines[1].Event.ToolName, write)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "hello\r\nworld\n" {
		t.Errorf("observe must not block the write: %q %v", data, err)
	}
	if res := api.toolResults(); len(res) != 2 || res[0].IsError || res[1].IsError {
		t.Errorf("tool results %+v", res)
	}
	for _, pd := range run.permissionDecisions() {
		if pd["source"] == "hook" {
			t.Errorf("observe hook took a permission decision: %v", pd)
		}
	}
}
