package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// binary is the coworkbridge binary under test, built once for the whole run into a folder that
// TestMain removes.
var binary struct {
	dir  string
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	if sock := os.Getenv(envFlood); sock != "" {
		flood(sock) // this binary started again, as another user, to attack the socket
		return
	}
	dir, err := os.MkdirTemp("", "coworkbridge-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binary.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildCoworkbridge returns the binary under test, building it on first use.
func buildCoworkbridge(t testing.TB) string {
	t.Helper()
	statBinarySources(t)
	binary.once.Do(func() {
		binary.path = filepath.Join(binary.dir, "coworkbridge")
		out, err := exec.Command("go", "build", "-tags", "coworkbridge_dev", "-o", binary.path, "github.com/coworkbridge/coworkbridge/cmd/coworkbridge").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("build coworkbridge: %w\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// buildHookProgram builds a hook program (cmd/coworkbridge-hook, system mode's, or
// cmd/coworkbridge-userhook, per-user mode's) beside the binary under test, on first use.
func buildHookProgram(t testing.TB, name string) string {
	t.Helper()
	buildCoworkbridge(t)
	hookPrograms.mu.Lock()
	defer hookPrograms.mu.Unlock()
	if hookPrograms.built == nil {
		hookPrograms.built = map[string]error{}
	}
	path := filepath.Join(binary.dir, name)
	err, done := hookPrograms.built[name]
	if !done {
		out, berr := exec.Command("go", "build", "-tags", "coworkbridge_dev", "-o", path, "github.com/coworkbridge/coworkbridge/cmd/"+name).CombinedOutput()
		if berr != nil {
			err = fmt.Errorf("build %s: %w\n%s", name, berr, out)
		}
		hookPrograms.built[name] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

var hookPrograms struct {
	mu    sync.Mutex
	built map[string]error // by program, once built
}

// hostHookedProject is a project whose .claude/settings.json runs the host hook on every call,
// under an enforce managed.json: its folder, the log folder the hook records into, and the
// environment the CLI is run with.
func hostHookedProject(t *testing.T) (dir, logDir string, env []string) {
	t.Helper()
	claudeBinary(t)
	program := buildHookProgram(t, "coworkbridge-userhook")
	base := t.TempDir()
	cfg := filepath.Join(base, "managed.json")
	os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce"}`), 0o600)
	dir = filepath.Join(base, "project")
	for _, d := range []string{".claude", "outputs"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": "'" + program + "' --per-user", "timeout": 30}}}}}})
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), settings, 0o644)
	logDir = filepath.Join(base, "logs")
	return dir, logDir, []string{"COWORKBRIDGE_MANAGED_CONFIG=" + cfg, "COWORKBRIDGE_STATE_DIR=" + filepath.Join(base, "state"),
		"COWORKBRIDGE_LOG_DIR=" + logDir}
}

// The host-side hook, registered as an ordinary command hook (as the managed-settings drop-in
// does), is obeyed by the real CLI: a dangerous call is refused before it runs, a harmless one
// proceeds under the CLI's own permission rules.
func TestRealCLIObeysTheHostHook(t *testing.T) {
	dir, logDir, env := hostHookedProject(t)
	pwned := filepath.Join(dir, "outputs", "pwned")
	ok := filepath.Join(dir, "outputs", "ok.txt")
	api := newFakeAPI(t,
		[]toolUse{{Name: "Bash", Input: map[string]any{"command": "touch " + pwned + " && git push --force origin main", "description": "push"}}},
		[]toolUse{{Name: "Write", Input: map[string]any{"file_path": ok, "content": "fine\n"}}},
	)
	run := runCLI(t, api, dir, env...)

	if _, err := os.Stat(pwned); err == nil {
		t.Error("the denied command ran")
	}
	if data, err := os.ReadFile(ok); err != nil || string(data) != "fine\n" {
		t.Errorf("the harmless write did not happen: %q %v", data, err)
	}
	res := streamToolResults(run)
	if len(res) != 2 || !res[0].IsError || !strings.Contains(res[0].Content, "coworkbridge: rule bash.git-push-force") || res[1].IsError {
		t.Errorf("tool results %+v", res)
	}
	var fromHook int
	for _, pd := range run.permissionDecisions() {
		if pd["source"] == "hook" {
			fromHook++
		}
	}
	if fromHook != 1 {
		t.Errorf("%d hook permission decisions, want 1 (the deny; no objection is not an allow): %v", fromHook, run.permissionDecisions())
	}
	log, _ := os.ReadFile(filepath.Join(logDir, "decisions.jsonl"))
	if strings.Count(string(log), `"transport":"host-hook"`) != 2 || !strings.Contains(string(log), `"rule":"bash.git-push-force"`) {
		t.Errorf("decision log:\n%s", log)
	}
}

// streamToolResults reads the tool results from the CLI's own stream records.
func streamToolResults(run cliRun) []toolResult {
	var out []toolResult
	for _, rec := range run.Records {
		msg, _ := rec["message"].(map[string]any)
		if rec["type"] != "user" || msg == nil {
			continue
		}
		content, _ := msg["content"].([]any)
		for _, c := range content {
			m, _ := c.(map[string]any)
			if m["type"] != "tool_result" {
				continue
			}
			text, _ := m["content"].(string)
			isErr, _ := m["is_error"].(bool)
			id, _ := m["tool_use_id"].(string)
			out = append(out, toolResult{ToolUseID: id, IsError: isErr, Content: text})
		}
	}
	return out
}
