// Package e2e drives the real Claude Code CLI, offline, against coworkbridge.
//
// The CLI comes from npm (pinned below) into a cache folder outside the repository, or from
// $COWORKBRIDGE_CLAUDE_BIN. Without either the tests skip and say how to enable them; with
// COWORKBRIDGE_E2E=require (CI sets it) a missing CLI is a failure.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// cliVersion is the Claude Code release the tests pin: the newest, whose new keys and events the
// guard must refuse by default. previousCLIVersion is the pin before it; the scenarios whose
// behaviour differs between releases run against both (claudeBinaryAt).
const (
	cliVersion         = "2.1.332"
	previousCLIVersion = "2.1.329"
)

var (
	cliMu    sync.Mutex
	cliFound = map[string]cliInstall{}
)

type cliInstall struct{ path, err string }

// claudeBinary returns the pinned CLI to drive, installing it once per machine if needed.
func claudeBinary(t testing.TB) string {
	t.Helper()
	return claudeBinaryAt(t, cliVersion)
}

// claudeBinaryAt returns the CLI of one release. $COWORKBRIDGE_CLAUDE_BIN stands in for the
// pinned release only, and must be that release: a test run on another binary than it says
// would prove nothing about the pin.
func claudeBinaryAt(t testing.TB, version string) string {
	t.Helper()
	cliMu.Lock()
	got, ok := cliFound[version]
	if !ok {
		got = findOrInstallCLI(version)
		cliFound[version] = got
	}
	cliMu.Unlock()
	if got.path == "" {
		msg := "Claude Code CLI " + version + " unavailable: " + got.err +
			". To run these tests, install npm (the CLI is then fetched into the user cache folder) or set COWORKBRIDGE_CLAUDE_BIN to a claude " + cliVersion + " binary."
		if os.Getenv("COWORKBRIDGE_E2E") == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return got.path
}

func findOrInstallCLI(version string) cliInstall {
	if p := os.Getenv("COWORKBRIDGE_CLAUDE_BIN"); p != "" && version == cliVersion {
		if _, err := os.Stat(p); err != nil {
			return cliInstall{err: "COWORKBRIDGE_CLAUDE_BIN: " + err.Error()}
		}
		return checkVersion(p, version)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return cliInstall{err: err.Error()}
	}
	dir := filepath.Join(cache, "coworkbridge-e2e", "claude-code-"+version)
	platform := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	bin := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+platform, "claude")
	if _, err := os.Stat(bin); err == nil {
		return checkVersion(bin, version)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return cliInstall{err: "npm not found"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cliInstall{err: err.Error()}
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--prefix", dir, "@anthropic-ai/claude-code@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		return cliInstall{err: "npm install failed: " + err.Error() + ": " + lastLines(string(out), 5)}
	}
	if _, err := os.Stat(bin); err != nil {
		return cliInstall{err: "npm installed no binary at " + bin}
	}
	return checkVersion(bin, version)
}

// checkVersion runs bin --version and accepts it only if it is version.
func checkVersion(bin, version string) cliInstall {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return cliInstall{err: bin + " --version: " + err.Error()}
	}
	got, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if got != version {
		return cliInstall{err: fmt.Sprintf("%s is Claude Code %s, not the %s these tests pin", bin, got, version)}
	}
	return cliInstall{path: bin}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// cliRun is the outcome of one CLI run in stream-json mode.
type cliRun struct {
	Records []map[string]any
	Stderr  string
	Stdout  string
	Elapsed time.Duration
}

// permissionDecisions collects tool_result_meta permission decisions from the stream.
func (r cliRun) permissionDecisions() []map[string]any {
	var out []map[string]any
	for _, rec := range r.Records {
		metas, _ := rec["tool_result_meta"].([]any)
		for _, m := range metas {
			if mm, ok := m.(map[string]any); ok {
				if pd, ok := mm["permission_decision"].(map[string]any); ok {
					out = append(out, pd)
				}
			}
		}
	}
	return out
}

// runCLI runs one prompt headless in a Cowork-like session folder, the way Cowork starts it:
// CLAUDE_CONFIG_DIR is the session's .claude, the cwd its outputs/.
func runCLI(t testing.TB, api *fakeAPI, sessionDir string, extraEnv ...string) cliRun {
	t.Helper()
	return runCLIAs(t, api, sessionDir, nil, nil, extraEnv...)
}

// vmView is how the CLI sees the session inside Cowork's VM: only at Guest
// (/sessions/<name>/mnt), with the host's sessions root (Hide) out of sight.
type vmView struct {
	Guest, Hide string
}

// runCLIAs is runCLI; with a vmView, the CLI runs in a mount namespace that shows it the session
// as the VM does, so a host path baked into a hook would fail.
// cliArgs are extra command-line arguments for the CLI.
func runCLIAs(t testing.TB, api *fakeAPI, sessionDir string, vm *vmView, cliArgs []string, extraEnv ...string) cliRun {
	t.Helper()
	return runCLIWith(t, cliVersion, api, sessionDir, vm, cliArgs, nil, extraEnv...)
}

// runCLIAt is runCLI with the CLI of another release.
func runCLIAt(t testing.TB, version string, api *fakeAPI, sessionDir string, extraEnv ...string) cliRun {
	t.Helper()
	return runCLIWith(t, version, api, sessionDir, nil, nil, nil, extraEnv...)
}

func runCLIWith(t testing.TB, version string, api *fakeAPI, sessionDir string, vm *vmView, cliArgs, wrapper []string, extraEnv ...string) cliRun {
	t.Helper()
	run, err := tryCLIWith(t, version, api, sessionDir, vm, cliArgs, wrapper, extraEnv...)
	if err != nil {
		t.Fatalf("claude exited with %v\nstderr: %s\nstdout: %.2000s", err, run.Stderr, run.Stdout)
	}
	return run
}

// tryCLIWith is runCLIWith for a run that may fail: the CLI's error is returned, not fatal.
func tryCLIWith(t testing.TB, version string, api *fakeAPI, sessionDir string, vm *vmView, cliArgs, wrapper []string, extraEnv ...string) (cliRun, error) {
	t.Helper()
	bin := claudeBinaryAt(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"-p", "do the task", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}, cliArgs...)
	configDir := filepath.Join(sessionDir, ".claude")
	cmd := exec.CommandContext(ctx, bin, args...)
	if len(wrapper) > 0 {
		cmd = exec.CommandContext(ctx, wrapper[0], append(append(wrapper[1:len(wrapper):len(wrapper)], bin), args...)...)
	}
	cmd.Dir = filepath.Join(sessionDir, "outputs")
	if vm != nil {
		configDir = vm.Guest + "/.claude"
		script := `set -e
[ -d /sessions ] || mkdir /sessions
mount -t tmpfs coworkbridge-e2e /sessions
mkdir -p "$GUEST"
mount --bind "$HOST" "$GUEST"
mount -t tmpfs coworkbridge-e2e-hidden "$HIDE"
cd "$GUEST/outputs"
if [ -n "$AS_UID" ]; then exec setpriv --reuid="$AS_UID" --regid="$AS_GID" --init-groups "$@"; fi
exec "$@"`
		cmd = exec.CommandContext(ctx, "unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", bin}, args...)...)
		cmd.Dir = ""
		extraEnv = append(extraEnv, "GUEST="+vm.Guest, "HOST="+sessionDir, "HIDE="+vm.Hide)
	}
	home := t.TempDir()
	cmd.Env = append([]string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + api.srv.URL, "ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CONFIG_DIR=" + configDir,
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_IS_COWORK=1",
	}, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	run := cliRun{Stderr: stderr.String(), Stdout: stdout.String(), Elapsed: time.Since(start)}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			run.Records = append(run.Records, rec)
		}
	}
	return run, err
}

// newCoworkSession builds <root>/acct/org/local_<id>/ with .claude/settings.json = {} and the
// folders Cowork makes.
func newCoworkSession(t testing.TB, root, id string) string {
	t.Helper()
	dir := filepath.Join(root, "acct", "org", "local_"+id)
	for _, d := range []string{".claude", "outputs", "uploads"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
