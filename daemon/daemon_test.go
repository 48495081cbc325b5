package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	harness "github.com/coworkbridge/coworkbridge/internal/machine"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/privsep"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/settingsschema"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// machine is one user's Mac in a temporary folder: managed.json, the state and log folders, and
// two sessions roots the configuration can point at.
type machine struct {
	dir    string
	env    managedconfig.Env
	log    *cbtest.Buffer
	config string
	// users are the people a system daemon serves (none: no worker is started; the workers
	// themselves are tested end to end, with the binary).
	users func() ([]privsep.User, error)
}

func newMachine(t *testing.T) *machine {
	t.Helper()
	dir := t.TempDir()
	m := &machine{dir: dir, config: filepath.Join(dir, "managed.json"), log: new(cbtest.Buffer)}
	vars := map[string]string{
		managedconfig.EnvManagedConfig: m.config,
		managedconfig.EnvStateDir:      filepath.Join(dir, "state"),
		managedconfig.EnvLogDir:        filepath.Join(dir, "logs"),
	}
	m.env = managedconfig.Env{GOOS: "darwin", Home: dir, Getenv: func(k string) string { return vars[k] }}
	return m
}

func (m *machine) root(name string) string { return filepath.Join(m.dir, name) }

// writeConfig replaces managed.json in one step, as an MDM does.
func (m *machine) writeConfig(t *testing.T, format string, args ...any) {
	t.Helper()
	tmp := m.config + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, format, args...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, m.config); err != nil {
		t.Fatal(err)
	}
}

// session makes a Cowork session folder under root, with the settings Cowork writes at start.
func (m *machine) session(t *testing.T, root, id string) string {
	t.Helper()
	dir := filepath.Join(root, "acct", "org", "local_"+id)
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// installed is coworkbridge's program as a package installs it on m, the hook programs beside
// it, and returns its path.
func (m *machine) installed(t *testing.T) string {
	t.Helper()
	bin := m.root("bin")
	os.MkdirAll(bin, 0o755)
	for _, name := range []string{"coworkbridge", managedconfig.HookProgramName, managedconfig.UserHookProgramName} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(bin, "coworkbridge")
}

// start runs a daemon on m until the test ends, or stop is called.
func (m *machine) start(t *testing.T) (d *Daemon, stop func()) {
	t.Helper()
	level := new(slog.LevelVar)
	d, err := New(m.env, Options{Logger: slog.New(slog.NewJSONHandler(m.log, &slog.HandlerOptions{Level: level})), Level: level, Version: "test",
		DropInDir: m.root("managed-settings.d"), Executable: m.installed(t), Users: m.users})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			d.Close()
		})
	}
	t.Cleanup(stop)
	return d, stop
}

// hook is our hook's command in a session's settings, "" when it is not there.
func hook(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	if err != nil {
		return ""
	}
	return hookentry.HookCommand(data)
}

func waitHook(t *testing.T, dir, want string) {
	t.Helper()
	cbtest.WaitForf(t, func() bool {
		h := hook(dir)
		if want == "" {
			return h == ""
		}
		return strings.Contains(h, "mode="+want)
	}, func() string {
		return fmt.Sprintf("%s: hook %q, want mode %q", filepath.Base(dir), hook(dir), want)
	})
}

func waitHealth(t *testing.T, d *Daemon, what string, ok func(health.Snapshot) bool) health.Snapshot {
	t.Helper()
	var s health.Snapshot
	cbtest.WaitForf(t, func() bool { s = d.Health(); return ok(s) }, func() string {
		return fmt.Sprintf("timed out waiting for %s; config %+v, warnings %+v", what, s.Config, s.Warnings)
	})
	return s
}

func TestASecondDaemonOfTheSameUserIsRefusedNamingTheFirst(t *testing.T) {
	m := newMachine(t)
	m.start(t)
	_, err := New(m.env, Options{Logger: slog.New(slog.DiscardHandler)})
	var running *AlreadyRunningError
	if !errors.As(err, &running) || running.PID != os.Getpid() {
		t.Fatalf("second daemon: %v, want AlreadyRunningError naming pid %d", err, os.Getpid())
	}
}

func TestSwitchingOffTakesOurHooksOutOfEverySession(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	a, b := m.session(t, root, "a"), m.session(t, root, "b")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, root)
	d, _ := m.start(t)
	waitHook(t, a, "enforce")
	waitHook(t, b, "enforce")

	m.writeConfig(t, `{"version":1,"cowork_enabled":false,"mode":"enforce","sessions_roots":[%q]}`, root)
	waitHook(t, a, "")
	waitHook(t, b, "")
	waitHealth(t, d, "the switch off, no session left hooked", func(s health.Snapshot) bool { return !s.Config.Enabled && s.Counts.Hooked == 0 })
	// Nothing puts them back while off.
	c := m.session(t, root, "c")
	m.writeConfig(t, `{"version":1,"cowork_enabled":false,"mode":"observe","sessions_roots":[%q]}`, root)
	waitHealth(t, d, "the new file", func(s health.Snapshot) bool { return s.Config.Mode == "observe" })
	if hook(a) != "" || hook(c) != "" {
		t.Errorf("a session was hooked while off: a %q, c %q", hook(a), hook(c))
	}
}

func TestModeChangesReachEverySessionWithoutRestart(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	a := m.session(t, root, "a")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","sessions_roots":[%q]}`, root)
	m.start(t)
	waitHook(t, a, "observe")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, root)
	waitHook(t, a, "enforce")
}

func TestMovedRootsUnhookTheSessionsLeftBehindAndHookTheNewOnes(t *testing.T) {
	m := newMachine(t)
	oldRoot, newRoot := m.root("old"), m.root("new")
	left, found := m.session(t, oldRoot, "left"), m.session(t, newRoot, "found")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, oldRoot)
	m.start(t)
	waitHook(t, left, "enforce")
	if hook(found) != "" {
		t.Fatal("a session outside the roots was hooked")
	}

	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, newRoot)
	waitHook(t, found, "enforce")
	// An enforce hook nobody answers would deny every call in the session left behind.
	waitHook(t, left, "")
}

func TestABrokenPolicyKeepsThePreviousOneInForceAndIsRaised(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	a := m.session(t, root, "a")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, root)
	d, _ := m.start(t)
	waitHook(t, a, "enforce")

	rules := m.root("rules")
	if err := os.MkdirAll(rules, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rules, "broken-bash.rules"), []byte("this is not a rule\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q],"policy":{"rules_dirs":[%q]}}`, root, rules)
	s := waitHealth(t, d, "the policy problem", func(s health.Snapshot) bool { return s.Config.PolicyProblem != "" })
	if !strings.Contains(s.Config.PolicyProblem, "broken-bash.rules") || s.Config.PolicyFallback == "" {
		t.Errorf("policy problem %q, fallback %q: want the file named and a fallback", s.Config.PolicyProblem, s.Config.PolicyFallback)
	}
	if !hasWarning(s, health.CodeConfigInvalid) {
		t.Errorf("warnings %+v: want config_invalid", s.Warnings)
	}
	if hook(a) == "" {
		t.Error("the session lost its hook over a broken policy")
	}
	if !strings.Contains(m.log.String(), "broken-bash.rules") {
		t.Errorf("the log does not name the broken file:\n%s", m.log.String())
	}

	// Fixed: the problem clears.
	if err := os.WriteFile(filepath.Join(rules, "broken-bash.rules"), []byte("# nothing yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q],"policy":{"rules_dirs":[%q]},"log_level":"debug"}`, root, rules)
	waitHealth(t, d, "the problem to clear", func(s health.Snapshot) bool { return s.Config.PolicyProblem == "" })
}

func TestABrokenFileAskingForEnforceWithNoGoodCopyGuardsEverySessionInEnforce(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	a := m.session(t, root, "a")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q],`, root)
	d, _ := m.start(t)
	s := waitHealth(t, d, "config_invalid", func(s health.Snapshot) bool { return hasWarning(s, health.CodeConfigInvalid) })
	if s.Config.Origin != managedconfig.OriginInvalid || s.Config.Mode != "enforce" || s.Config.Problem == "" ||
		!s.Config.Enabled || !s.Config.FailingClosed {
		t.Errorf("config state %+v: want invalid, enforce, on and failing closed, with its problem", s.Config)
	}
	// The file's own roots are unreadable: the default roots are guarded, not this one.
	if hook(a) != "" {
		t.Errorf("a root named only by the broken file was hooked: %q", hook(a))
	}
}

func hasWarning(s health.Snapshot, code health.Code) bool {
	for _, w := range s.Warnings {
		if w.Code == code {
			return true
		}
	}
	return false
}

// The daemon's own lines use the heartbeat's keys for the same things (config_origin,
// config_hash, uptime_s), so that one query finds both.
func TestTheLogUsesTheHeartbeatsKeys(t *testing.T) {
	m := newMachine(t)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","sessions_roots":[%q]}`, m.root("sessions"))
	_, stop := m.start(t)
	cbtest.WaitFor(t, "the configuration in force", func() bool { return strings.Contains(m.log.String(), "managed config in force") })
	stop()
	for _, want := range []string{`"config_origin":"file"`, `"config_hash":"`, `"uptime_s":`} {
		if !strings.Contains(m.log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, m.log.String())
		}
	}
}

// A new heartbeat_interval takes effect without a restart: health.json, which status reads, says
// which interval the running heartbeat has.
func TestAHeartbeatIntervalChangeRestartsTheHeartbeat(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","sessions_roots":[%q],"heartbeat_interval":"1h"}`, root)
	m.start(t)
	paths, err := m.env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	interval := func() string {
		s, err := health.ReadSnapshot(paths.HealthFile())
		if err != nil {
			return ""
		}
		return s.Daemon.HeartbeatInterval
	}
	cbtest.WaitFor(t, "health.json with the hourly heartbeat", func() bool { return interval() == "1h0m0s" })
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","sessions_roots":[%q],"heartbeat_interval":"2s"}`, root)
	cbtest.WaitForf(t, func() bool { return interval() == "2s" }, func() string {
		return "health.json still says heartbeat_interval " + interval() + ", want 2s"
	})
}

// Moving the decision log restarts the guard on the new file: the next call is recorded there,
// and the sessions keep their hooks throughout.
func TestAMovedDecisionLogTakesTheNextCalls(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	a := m.session(t, root, "a")
	os.MkdirAll(filepath.Join(a, "outputs"), 0o700)
	first, second := m.root("first.jsonl"), m.root("second.jsonl")
	cfg := `{"version":1,"cowork_enabled":true,"mode":"observe","log_level":"debug","sessions_roots":[%q],"telemetry":{"path":%q}}`
	m.writeConfig(t, cfg, root, first)
	m.start(t)
	waitHook(t, a, "observe")
	call := func(command string) {
		t.Helper()
		if _, _, err := harness.CallHook(a, hook(a), harness.BashPayload(command)); err != nil {
			t.Fatal(err)
		}
	}
	recorded := func(path, command string) bool {
		recs, _ := telemetry.ReadFile(path)
		for _, r := range recs {
			if strings.Contains(string(r.Input), command) {
				return true
			}
		}
		return false
	}
	call("echo one")
	cbtest.WaitFor(t, "the first call in the first log", func() bool { return recorded(first, "echo one") })

	m.writeConfig(t, cfg, root, second)
	// The line that says the new guard runs, not the config line, which names the path first.
	cbtest.WaitFor(t, "the guard on the second log", func() bool { return strings.Contains(m.log.String(), `"decision_log":"`+second+`"`) })
	waitHook(t, a, "observe")
	call("echo two")
	cbtest.WaitForf(t, func() bool { return recorded(second, "echo two") }, func() string {
		f1, _ := os.ReadFile(first)
		f2, _ := os.ReadFile(second)
		return "the second call is not in the second log; first:\n" + string(f1) + "\nsecond:\n" + string(f2)
	})
	if recorded(first, "echo two") {
		t.Error("the second call went to the old log too")
	}
}

// The daemon checks the installed drop-in at start and at each config change: missing is a fault
// only when managed.json asks for what only the drop-in delivers; altered always is.
func TestTheDaemonReportsAMissingOrAlteredDropIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the drop-in must be owned by root: run as root to write one")
	}
	m := newMachine(t)
	root := m.root("sessions")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, root)
	d, _ := m.start(t)
	waitHealth(t, d, "no drop-in warning without lockdown", func(s health.Snapshot) bool {
		return s.Config.Enabled && !hasWarning(s, health.CodeManagedSettings)
	})
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":[%q]}`, root)
	s := waitHealth(t, d, "a missing drop-in raised under lockdown", func(s health.Snapshot) bool {
		return hasWarning(s, health.CodeManagedSettings)
	})
	if !strings.Contains(warningOf(s, health.CodeManagedSettings), "not installed") {
		t.Errorf("warning: %s", warningOf(s, health.CodeManagedSettings))
	}
	sc, err := settingsschema.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := managedconfig.Parse([]byte(fmt.Sprintf(`{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":[%q]}`, root)), "test", m.env, managedconfig.Paths{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := dropin.Content(dropin.Hook{Exe: m.root("bin/coworkbridge")}, cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := dropin.Write(m.root("managed-settings.d"), want); err != nil {
		t.Fatal(err)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":[%q],"log_level":"debug"}`, root)
	waitHealth(t, d, "the installed drop-in accepted", func(s health.Snapshot) bool {
		return !hasWarning(s, health.CodeManagedSettings)
	})
	// The program it runs taken away: every call on the Mac is blocked, and the daemon says why.
	program := m.root("bin/" + managedconfig.UserHookProgramName)
	os.Rename(program, program+".gone")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":[%q]}`, root)
	s = waitHealth(t, d, "a drop-in whose hook program is gone", func(s health.Snapshot) bool {
		return hasWarning(s, health.CodeManagedSettings)
	})
	if !strings.Contains(warningOf(s, health.CodeManagedSettings), "would block every tool call") {
		t.Errorf("warning: %s", warningOf(s, health.CodeManagedSettings))
	}
	os.Rename(program+".gone", program)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":[%q],"log_level":"debug"}`, root)
	waitHealth(t, d, "the hook program back", func(s health.Snapshot) bool {
		return !hasWarning(s, health.CodeManagedSettings)
	})
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, root)
	s = waitHealth(t, d, "a drop-in that still locks down is altered", func(s health.Snapshot) bool {
		return hasWarning(s, health.CodeManagedSettings)
	})
	if !strings.Contains(warningOf(s, health.CodeManagedSettings), "not what this configuration asks for") {
		t.Errorf("warning: %s", warningOf(s, health.CodeManagedSettings))
	}
}

func warningOf(s health.Snapshot, code health.Code) string {
	for _, w := range s.Warnings {
		if w.Code == code {
			return w.Message
		}
	}
	return ""
}

// The heartbeat publishes the decision log's chain head, and a record cut from the log behind the
// daemon's back is found, warned about and recorded in the log itself.
func TestACutInTheDecisionLogIsFoundAndTheHeadPublished(t *testing.T) {
	m := newMachine(t)
	root := m.root("sessions")
	a := m.session(t, root, "a")
	os.MkdirAll(filepath.Join(a, "outputs"), 0o700)
	logPath := m.root("decisions.jsonl")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","sessions_roots":[%q],"heartbeat_interval":"1s","telemetry":{"path":%q}}`, root, logPath)
	d, _ := m.start(t)
	waitHook(t, a, "observe")
	for _, c := range []string{"echo one", "rm -rf ~"} {
		if _, _, err := harness.CallHook(a, hook(a), harness.BashPayload(c)); err != nil {
			t.Fatal(err)
		}
	}
	cbtest.WaitFor(t, "two records", func() bool { recs, _ := telemetry.ReadFile(logPath); return len(recs) == 2 })
	head := waitHealth(t, d, "the head of both records published", func(s health.Snapshot) bool {
		return s.Record != nil && s.Record.Size > 0 && s.Record.Head == mustHead(t, logPath)
	}).Record.Head

	data, _ := os.ReadFile(logPath)
	lines := strings.SplitAfter(string(data), "\n")
	os.WriteFile(logPath, []byte(lines[0]), 0o600) // the would-be deny cut out
	waitHealth(t, d, "record_tampered counted", func(s health.Snapshot) bool { return s.Totals.Counts[health.CodeRecordTampered] == 1 })
	if !strings.Contains(m.log.String(), `"code":"record_tampered"`) {
		t.Errorf("no record_tampered line in the daemon log")
	}
	var found bool
	recs, _ := telemetry.ReadFile(logPath)
	for _, r := range recs {
		found = found || (r.Rule == ruleid.RecordTampered && strings.Contains(r.Reason, "was cut"))
	}
	if !found {
		t.Errorf("no %s record in the log: %+v", ruleid.RecordTampered, recs)
	}
	if v, _ := telemetry.Verify(telemetry.Files(logPath), head); len(v.MissingHeads) != 1 {
		t.Errorf("the published head %s should be missing from the cut log: %+v", head, v)
	}
}

func mustHead(t *testing.T, path string) string {
	v, err := telemetry.Verify([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	return v.Head
}
