package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	harness "github.com/coworkbridge/coworkbridge/internal/machine"
)

// The test binary doubles as the coworkbridge binary: started with this variable set, it runs
// main's dispatch instead of the tests. The daemon tests then exercise a real process.
const asMainEnv = "COWORKBRIDGE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(dispatch(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr, true}))
	}
	os.Exit(m.Run())
}

// machine is one user's world (internal/machine's): a home, a state folder, a managed.json
// location, a sessions root; this test binary is its coworkbridge.
type machine struct {
	home, state, config, sessions string
	extraEnv                      []string // more for the daemon's environment
	h                             *harness.Machine
}

func newMachine(t testing.TB) machine {
	t.Helper()
	h, err := harness.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return machine{home: h.Dir, state: h.State, config: h.Config, sessions: h.Sessions, h: h}
}

func (m machine) writeConfig(t testing.TB, content string) {
	t.Helper()
	if err := m.h.WriteConfig(content); err != nil {
		t.Fatal(err)
	}
}

func (m machine) environ() []string {
	return m.h.Environ(append([]string{asMainEnv + "=1", "HOME=" + m.home}, m.extraEnv...)...)
}

// proc is a running coworkbridge process whose JSON log lines are collected.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []map[string]any
	raw  bytes.Buffer
	done chan error
	// exited is closed once the process has been waited for.
	exited chan struct{}
}

func start(t *testing.T, m machine, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: exec.Command(exe, args...), done: make(chan error, 1), exited: make(chan struct{})}
	p.cmd.Env = m.environ()
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec map[string]any
			p.mu.Lock()
			p.raw.Write(append(sc.Bytes(), '\n'))
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				p.logs = append(p.logs, rec)
			}
			p.mu.Unlock()
		}
		err := p.cmd.Wait()
		close(p.exited)
		p.done <- err
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
		}
	})
	return p
}

// waitLog waits for a log record whose msg contains msg and whose attributes include want.
func (p *proc) waitLog(t *testing.T, msg string, want map[string]any) map[string]any {
	t.Helper()
	var found map[string]any
	cbtest.WaitForf(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, rec := range p.logs {
			if m, _ := rec["msg"].(string); strings.Contains(m, msg) && matches(rec, want) {
				found = rec
				return true
			}
		}
		return false
	}, func() string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Sprintf("no log %q with %v; log so far:\n%s", msg, want, p.raw.String())
	})
	return found
}

func matches(rec, want map[string]any) bool {
	for k, v := range want {
		if rec[k] != v {
			return false
		}
	}
	return true
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		t.Fatal("process did not exit")
		return -1
	}
}

func TestSecondDaemonRefusesAndSIGTERMStopsTheFirst(t *testing.T) {
	m := newMachine(t)
	first := start(t, m, "run")
	first.waitLog(t, "no managed config found", nil)

	second := start(t, m, "run")
	if code := second.wait(t); code == 0 {
		t.Fatal("second daemon exited 0, want non-zero")
	}
	rec := second.waitLog(t, "cannot start", nil)
	want := "already running (pid " + strconv.Itoa(first.cmd.Process.Pid) + ")"
	if err, _ := rec["err"].(string); !strings.Contains(err, want) {
		t.Errorf("second daemon said %q, want it to contain %q", err, want)
	}

	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.wait(t); code != 0 {
		t.Errorf("first daemon exited %d after SIGTERM, want 0", code)
	}
	first.waitLog(t, "coworkbridge stopped", nil)

	// The lock is free again.
	third := start(t, m, "run")
	third.waitLog(t, "no managed config found", nil)
	third.cmd.Process.Signal(syscall.SIGINT)
	if code := third.wait(t); code != 0 {
		t.Errorf("third daemon exited %d after SIGINT, want 0", code)
	}
}

func TestRunLogsEffectiveConfigAndFollowsChanges(t *testing.T) {
	m := newMachine(t)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`)
	p := start(t, m, "run")
	p.waitLog(t, "coworkbridge starting", nil)
	p.waitLog(t, "development overrides in effect", nil)
	rec := p.waitLog(t, "managed config in force", map[string]any{"mode": "observe", "cowork_enabled": true})
	if roots, _ := rec["sessions_roots"].([]any); len(roots) != 1 || roots[0] != m.sessions {
		t.Errorf("sessions_roots %v, want the override %s", rec["sessions_roots"], m.sessions)
	}

	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"debug"}`)
	p.waitLog(t, "managed config in force", map[string]any{"mode": "enforce"})

	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","hook_timeout":"soon"}`)
	rec = p.waitLog(t, "running on the last good copy", map[string]any{"code": "config_invalid"})
	if err, _ := rec["err"].(string); !strings.Contains(err, "hook_timeout") {
		t.Errorf("config_invalid record %v does not name the bad field", rec)
	}

	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","log_level":"debug"}`)
	p.waitLog(t, "managed config is valid again", nil)

	m.writeConfig(t, `{"version":1,"cowork_enabled":false}`)
	p.waitLog(t, "coworkbridge is idle", nil)

	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		p.mu.Lock()
		t.Errorf("exit %d, want 0; log:\n%s", code, p.raw.String())
		p.mu.Unlock()
	}
}

func TestRunWithInvalidConfigAndNoGoodCopyStaysOffLoudly(t *testing.T) {
	m := newMachine(t)
	m.writeConfig(t, `{"version":1,"mode":"enforcing"}`)
	p := start(t, m, "run")
	rec := p.waitLog(t, "coworkbridge is OFF", map[string]any{"code": "config_invalid", "level": "ERROR"})
	if err, _ := rec["err"].(string); !strings.Contains(err, `"enforcing" is not a mode`) {
		t.Errorf("error %q does not explain the problem", err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"help"}, exitOK, "Commands:\n  run", ""},
		{[]string{"--help"}, exitOK, "version", ""},
		{nil, exitUsage, "Usage: coworkbridge <command>", ""},
		{[]string{"version"}, exitOK, "coworkbridge ", ""},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"run", "extra"}, exitUsage, "", "Usage: coworkbridge run"},
		{[]string{"run", "-bogus"}, exitUsage, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := dispatch(context.Background(), tt.args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.err) {
				t.Errorf("code %d out %q err %q; want code %d, out containing %q, err containing %q",
					code, out.String(), errb.String(), tt.code, tt.out, tt.err)
			}
		})
	}
}

func TestRunHooksSessionsWhileEnabledAndUnhooksWhenSwitchedOff(t *testing.T) {
	m := newMachine(t)
	dir := filepath.Join(m.sessions, "acct", "org", "local_1")
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, ".claude", "settings.json")
	os.WriteFile(settings, []byte(`{"model":"opus"}`), 0o644)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	p := start(t, m, "run")
	p.waitLog(t, "guarding Cowork sessions", map[string]any{"mode": "enforce"})
	waitFile(t, settings, "mode=enforce")

	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`)
	waitFile(t, settings, "mode=observe")

	m.writeConfig(t, `{"version":1,"cowork_enabled":false}`)
	p.waitLog(t, "hooks removed from sessions", map[string]any{"sessions_changed": float64(1)})
	if data, _ := os.ReadFile(settings); strings.Contains(string(data), "coworkbridge-hook") || !strings.Contains(string(data), "opus") {
		t.Errorf("after switching off: %s", data)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d", code)
	}
}

func waitFile(t *testing.T, path, want string) {
	t.Helper()
	cbtest.WaitForf(t, func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), want)
	}, func() string {
		data, _ := os.ReadFile(path)
		return fmt.Sprintf("%s never contained %q; it holds:\n%.300s", path, want, data)
	})
}

// runOnce runs a short subcommand as its own process and returns its exit code and stdout.
func runOnce(t *testing.T, m machine, args ...string) (int, string) {
	t.Helper()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, args...)
	cmd.Env = m.environ()
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

func TestStatusFollowsTheDaemon(t *testing.T) {
	m := newMachine(t)
	if code, out := runOnce(t, m, "status"); code != statusNotRunning || !strings.Contains(out, "NOT running") {
		t.Fatalf("before start: %d %q", code, out)
	}
	os.MkdirAll(filepath.Join(m.sessions, "acct", "org", "local_1", ".claude"), 0o755)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","heartbeat_interval":"1s"}`)
	p := start(t, m, "run")
	p.waitLog(t, "heartbeat", map[string]any{"sessions_hooked": float64(1)})
	code, out := runOnce(t, m, "status")
	if code != statusHealthy || !strings.Contains(out, "mode observe") || !strings.Contains(out, "1 live, 1 hooked") {
		t.Errorf("running: %d\n%s", code, out)
	}
	code, out = runOnce(t, m, "status", "--json")
	var js struct {
		Running  bool
		Healthy  bool
		Snapshot struct{ Counts struct{ Hooked int } }
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || !js.Running || !js.Healthy || js.Snapshot.Counts.Hooked != 1 || code != 0 {
		t.Errorf("--json: %d %v %s", code, err, out)
	}

	before, _ := health.ReadSnapshot(filepath.Join(m.state, "health.json"))
	// A rewrite must be able to carry a later time than the snapshot it replaces.
	cbtest.WaitFor(t, "the clock past the snapshot", func() bool { return time.Now().After(before.WrittenAt) })
	p.cmd.Process.Signal(syscall.SIGUSR1)
	cbtest.WaitFor(t, "SIGUSR1 to rewrite health.json", func() bool {
		after, _ := health.ReadSnapshot(filepath.Join(m.state, "health.json"))
		return after.WrittenAt.After(before.WrittenAt)
	})

	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)
	if code, _ := runOnce(t, m, "status"); code != statusNotRunning {
		t.Errorf("after stop: exit %d", code)
	}
}

// decisionLog is the machine's decision log at its default place, "" when there is none.
func (m machine) decisionLog(t *testing.T) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(m.home, "logs", "decisions.jsonl"))
	return string(data)
}
