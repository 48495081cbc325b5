package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	harness "github.com/coworkbridge/coworkbridge/internal/machine"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// enforceConfig answers within 2 s: the hook gives up then, well inside Claude Code's 30 s.
const enforceConfig = `{"version":1,"cowork_enabled":true,"mode":"enforce","decision_timeout":"2s","hook_timeout":"30s"}`

// newSessionIn makes a Cowork-like session folder and returns it.
func newSessionIn(t *testing.T, m machine, name string) string {
	t.Helper()
	dir := filepath.Join(m.sessions, "acct", "org", name)
	for _, sub := range []string{".claude", "outputs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// callHook runs the session's hook as Claude Code does and returns what it printed and how long
// it took.
func callHook(t *testing.T, dir, hook, command string) (string, time.Duration) {
	t.Helper()
	out, took, err := harness.CallHook(dir, hook, harness.BashPayload(command))
	if err != nil {
		t.Fatal(err)
	}
	return string(out), took
}

func waitHook(t *testing.T, dir string, mode managedconfig.Mode) string {
	t.Helper()
	waitFile(t, filepath.Join(dir, ".claude", "settings.json"), "mode="+string(mode))
	return hookCommand(filepath.Join(dir, ".claude", "settings.json"))
}

// assertDenied checks the hook denied, in time, with a reason naming coworkbridge.
func assertDenied(t *testing.T, out string, took, within time.Duration, reason string) {
	t.Helper()
	if hookAnswer([]byte(out)) != "deny" || !strings.Contains(out, "coworkbridge: ") || !strings.Contains(out, reason) {
		t.Errorf("hook printed %q, want a deny mentioning %q", out, reason)
	}
	if took > within {
		t.Errorf("the deny took %v, more than %v", took, within)
	}
}

func TestEnforceRoundTripThroughTheRealDaemon(t *testing.T) {
	m := newMachine(t)
	dir := newSessionIn(t, m, "local_1")
	m.writeConfig(t, enforceConfig)
	p := start(t, m, "run")
	hook := waitHook(t, dir, managedconfig.Enforce)
	out, _ := callHook(t, dir, hook, "rm -rf ~")
	assertDenied(t, out, 0, time.Hour, "bash.rm-critical")
	if out, _ := callHook(t, dir, hook, "ls -la"); out != "" {
		t.Errorf("harmless call: hook printed %q, want nothing", out)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d", code)
	}
	// Stopped: the lease is withdrawn, so hooks deny at once rather than wait.
	out, took := callHook(t, dir, hook, "ls -la")
	assertDenied(t, out, took, time.Second, "not running")
}

func TestEnforceHookFailsClosedWhenTheDaemonNeverRan(t *testing.T) {
	m := newMachine(t)
	dir := newSessionIn(t, m, "local_1")
	script, err := hookentry.Script(hookentry.ScriptParams{Mode: managedconfig.Enforce, DecisionTimeout: 2 * time.Second, MaxLineBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	out, took := callHook(t, dir, script, "ls -la")
	assertDenied(t, out, took, time.Second, "not running")
}

func TestEnforceHookFailsClosedWhenTheDaemonStallsOrDiesWhileItWaits(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "stalled", true: "SIGKILLed"}[kill], func(t *testing.T) {
			m := newMachine(t)
			dir := newSessionIn(t, m, "local_1")
			m.writeConfig(t, enforceConfig)
			p := start(t, m, "run")
			hook := waitHook(t, dir, managedconfig.Enforce)
			if out, _ := callHook(t, dir, hook, "ls"); out != "" {
				t.Fatalf("warm-up call: %q", out)
			}
			p.cmd.Process.Signal(syscall.SIGSTOP) // the daemon holds its lease but answers nothing
			defer p.cmd.Process.Signal(syscall.SIGCONT)
			type result struct {
				out  string
				took time.Duration
			}
			res := make(chan result, 1)
			go func() { o, d := callHook(t, dir, hook, "ls -la"); res <- result{o, d} }()
			if kill {
				// The hook is waiting once its event file is written: in the host channel, the
				// staging folder or beside the spool (the stopped daemon takes none).
				cbtest.WaitFor(t, "the hook's event file", func() bool { return eventFiles(dir, m.state) > 0 })
				p.cmd.Process.Kill()
			}
			r := <-res
			// Decision timeout 2 s; Claude Code would let the call through at 30 s.
			assertDenied(t, r.out, r.took, 5*time.Second, "no decision from coworkbridge within 2s")
		})
	}
}

func TestDemoShowsTheDenies(t *testing.T) {
	m := newMachine(t)
	code, out := runOnce(t, m, "demo")
	if code != 0 {
		t.Fatalf("demo exit %d:\n%s", code, out)
	}
	for _, want := range []string{"deny (bash.rm-critical)", "ask (bash.git-discard)", "no objection", "healthy"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if code, out := runOnce(t, m, "demo", "--mode", "observe"); code != 0 || strings.Contains(out, "  deny  ") || !strings.Contains(out, "would-be denies") {
		t.Errorf("observe demo exit %d:\n%s", code, out)
	}
}

// A daemon killed at random moments of its drain, again and again, loses and duplicates nothing:
// every request id is in the decision log exactly once.
func TestSIGKILLDuringDrainsLosesAndDuplicatesNothing(t *testing.T) {
	m := newMachine(t)
	// The writers append far faster than any agent: that is a flood, not what this tests.
	m.extraEnv = []string{"COWORKBRIDGE_SESSION_BUDGET=100000000"}
	dirs := []string{newSessionIn(t, m, "local_1"), newSessionIn(t, m, "local_2")}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`)
	var mu sync.Mutex
	var rids []string
	stopWriting := make(chan struct{})
	var writers sync.WaitGroup
	for i, dir := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, ".claude", "coworkbridge"), 0o700); err != nil {
			t.Fatal(err)
		}
		writers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stopWriting:
					return
				default:
				}
				rid := fmt.Sprintf("%016x%016x", i+1, n)
				line := fmt.Sprintf(`{"v":1,"rid":%q,"mode":"observe","event":{"tool_name":"Bash","tool_input":{"command":"echo %d"}}}`+"\n", rid, n)
				f, err := os.OpenFile(filepath.Join(dir, ".claude", "coworkbridge", "events.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString(line)
				f.Close()
				mu.Lock()
				rids = append(rids, rid)
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
			}
		})
	}
	for range 8 {
		p := start(t, m, "run")
		time.Sleep(time.Duration(100+rand.IntN(300)) * time.Millisecond)
		p.cmd.Process.Kill()
		<-p.done
	}
	close(stopWriting)
	writers.Wait()
	p := start(t, m, "run")
	logPath := filepath.Join(m.home, "logs", "decisions.jsonl")
	cbtest.EventuallyWithin(30*time.Second, func() bool { return len(readRecords(logPath)) >= len(rids) }) // what is missing is named below
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)
	seen := map[string]int{}
	for _, r := range readRecords(logPath) {
		seen[r.RID]++
	}
	lost, doubled := 0, 0
	for _, rid := range rids {
		switch seen[rid] {
		case 0:
			lost++
		case 1:
		default:
			doubled++
		}
	}
	if lost > 0 || doubled > 0 || len(seen) != len(rids) {
		t.Errorf("%d events written, %d rids logged: %d lost, %d doubled", len(rids), len(seen), lost, doubled)
	}
	t.Logf("%d events across 8 SIGKILLs", len(rids))
}

// A broken managed.json that clearly asks for enforce, with no good copy to fall back on: the
// daemon fails closed as the host hook does (every call denied, saying the configuration is
// invalid without the file's path or the validator's words, which are the admin's), and says
// config_invalid with the problem in its log and heartbeat.
func TestABrokenEnforceConfigWithNoGoodCopyFailsClosed(t *testing.T) {
	m := newMachine(t)
	dir := newSessionIn(t, m, "local_1")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","heartbeat_interval":"1s","hook_timeout":"30"}`)
	p := start(t, m, "run")
	p.waitLog(t, "every tool call is DENIED", map[string]any{"code": "config_invalid"})
	hook := waitHook(t, dir, managedconfig.Enforce)
	out, _ := callHook(t, dir, hook, "ls -la")
	assertDenied(t, out, 0, time.Hour, "configuration on this Mac is invalid (config_invalid)")
	if strings.Contains(out, "managed.json") || strings.Contains(out, "hook_timeout") {
		t.Errorf("the user is shown the file or the validator's words: %s", out)
	}
	p.waitLog(t, "managed.json is invalid (it asks for enforce", map[string]any{"code": "config_invalid"})

	// Fixed: the real policy is in force again.
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","heartbeat_interval":"1s"}`)
	p.waitLog(t, "managed config in force", nil)
	if !cbtest.Eventually(func() bool { out, _ := callHook(t, dir, hook, "ls -la"); return out == "" }) {
		t.Fatal("ls is still denied after the file was fixed")
	}
}

// A managed.json whose policy does not compile is logged with its error and raised as
// config_invalid in the heartbeat, while the built-in rules keep guarding.
func TestAPolicyThatDoesNotCompileIsLoggedWithItsErrorAndRaised(t *testing.T) {
	m := newMachine(t)
	newSessionIn(t, m, "local_1")
	rules := filepath.Join(m.home, "rules")
	os.MkdirAll(rules, 0o700)
	os.WriteFile(filepath.Join(rules, "org-bash.rules"), []byte("block \"org.x\"\n  match (unclosed\n"), 0o600)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","heartbeat_interval":"1s","policy":{"rules_dirs":["`+rules+`"]}}`)
	p := start(t, m, "run")
	rec := p.waitLog(t, "policy in managed.json cannot be used: running on the built-in rules", map[string]any{"code": "config_invalid"})
	if e, _ := rec["err"].(string); !strings.Contains(e, "org-bash.rules:2: bad regular expression") {
		t.Errorf("err = %v, want the rule file's problem", rec["err"])
	}
	p.waitLog(t, "the policy in managed.json does not compile (running on the built-in rules)", map[string]any{"code": "config_invalid"})
}

// unhook refuses while the daemon runs (it would put the hooks back at once), and once it is
// stopped takes our entry out of every session, leaving the rest of the settings.
func TestUnhookWaitsForTheDaemonToStopThenRemovesEveryHook(t *testing.T) {
	m := newMachine(t)
	dir := newSessionIn(t, m, "local_1")
	m.writeConfig(t, enforceConfig)
	p := start(t, m, "run")
	waitHook(t, dir, managedconfig.Enforce)
	if code, _ := runOnce(t, m, "unhook"); code != exitFail {
		t.Errorf("unhook with the daemon running: exit %d, want 1", code)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)
	code, out := runOnce(t, m, "unhook")
	if code != exitOK || !strings.Contains(out, "removed from 1 session(s)") {
		t.Errorf("unhook: exit %d %q", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json")); strings.Contains(string(data), "coworkbridge-hook") {
		t.Errorf("a hook is left: %s", data)
	}
}

// The watches health reports are all the daemon holds, as the kernel counts them: the injector's,
// the collector's and the configuration watcher's.
func TestHealthCountsEveryWatchTheDaemonHolds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts inotify watches through /proc")
	}
	m := newMachine(t)
	for _, id := range []string{"local_1", "local_2", "local_3"} {
		newSessionIn(t, m, id)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","heartbeat_interval":"1s"}`)
	p := start(t, m, "run")
	p.waitLog(t, "heartbeat", map[string]any{"sessions_hooked": float64(3)})
	kernel := func() int {
		infos, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", p.cmd.Process.Pid))
		n := 0
		for _, f := range infos {
			data, _ := os.ReadFile(f)
			n += bytes.Count(data, []byte("inotify wd:"))
		}
		return n
	}
	var s health.Snapshot
	cbtest.WaitForf(t, func() bool {
		var err error
		s, err = health.ReadSnapshot(filepath.Join(m.state, "health.json"))
		return err == nil && s.Daemon.Watches > 0 && s.Daemon.Watches == kernel()
	}, func() string {
		return fmt.Sprintf("health reports %d watches, the kernel counts %d", s.Daemon.Watches, kernel())
	})
}

// eventFiles counts the hooks' event files (.ev-<rid>) below the folders given.
func eventFiles(dirs ...string) int {
	n := 0
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(e.Name(), ".ev-") {
				n++
			}
			return nil
		})
	}
	return n
}
