// Package machine is a user's Mac in one folder, for the tests and harnesses that run the real
// coworkbridge binary: managed.json, the daemon's state and log folders and one sessions root,
// reached through the development overrides; Cowork-like sessions; the daemon started, killed
// and stopped; and a session's hook run exactly as Claude Code runs it.
//
// It is not for deployments (the overrides it sets are development-only), it never touches a
// folder outside its own (MakeUser aside, which adds a user), and it does not import testing: tests, the round-trip benchmark and the
// soak harness alike turn its errors into failures.
package machine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// Machine is one user's world under Dir.
type Machine struct {
	Dir      string
	Config   string // managed.json
	Sessions string // the sessions root
	State    string
	Logs     string // the decision log's folder
	// Owner, when set, is the user whose sessions these are, for a system-mode daemon (root)
	// whose worker runs as them: the sessions root is under their home and theirs, and hooks run
	// as them.
	Owner *Owner
}

// Owner is a user of the machine other than the one running it.
type Owner struct {
	UID, GID int
	Home     string
}

// MakeUser adds a throw-away user of the system (useradd: needs root) whose home is a new folder
// under dir, which every user may then traverse; cleanup removes the user. It is the one thing
// here that reaches outside dir: system mode's sessions must be another user's.
func MakeUser(dir, name string) (o *Owner, cleanup func(), err error) {
	home := filepath.Join(dir, "home-"+name)
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, nil, err
	}
	if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("useradd %s (system mode needs root and a throw-away user): %v: %s", name, err, out)
	}
	cleanup = func() { exec.Command("userdel", "-f", name).Run() }
	u, err := user.Lookup(name)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	o = &Owner{Home: home}
	o.UID, _ = strconv.Atoi(u.Uid)
	o.GID, _ = strconv.Atoi(u.Gid)
	if err := os.Chown(home, o.UID, o.GID); err != nil {
		cleanup()
		return nil, nil, err
	}
	return o, cleanup, nil
}

// NewOwned lays out a machine in dir whose sessions are owner's, under owner's home (which must
// exist and be theirs).
func NewOwned(dir string, owner *Owner) (*Machine, error) {
	m, err := New(dir)
	if err != nil {
		return nil, err
	}
	m.Owner = owner
	m.Sessions = filepath.Join(owner.Home, "sessions-"+filepath.Base(dir))
	if err := os.MkdirAll(m.Sessions, 0o700); err != nil {
		return nil, fmt.Errorf("lay out the machine: %w", err)
	}
	return m, os.Chown(m.Sessions, owner.UID, owner.GID)
}

// New lays out a machine in dir, which should be empty.
func New(dir string) (*Machine, error) {
	m := &Machine{Dir: dir, Config: filepath.Join(dir, "managed.json"), Sessions: filepath.Join(dir, "sessions"),
		State: filepath.Join(dir, "state"), Logs: filepath.Join(dir, "logs")}
	for _, d := range []string{m.Sessions, m.Logs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("lay out the machine: %w", err)
		}
	}
	return m, nil
}

// DecisionLog is the decision log's default path on the machine.
func (m *Machine) DecisionLog() string { return filepath.Join(m.Logs, "decisions.jsonl") }

// vars are the development overrides that point coworkbridge at the machine.
func (m *Machine) vars() map[string]string {
	return map[string]string{
		managedconfig.EnvManagedConfig: m.Config, managedconfig.EnvSessionsRoot: m.Sessions,
		managedconfig.EnvStateDir: m.State, managedconfig.EnvLogDir: m.Logs,
	}
}

// Environ is this process's environment with every COWORKBRIDGE_* variable replaced by the
// machine's overrides, then extra ("KEY=value").
func (m *Machine) Environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COWORKBRIDGE_") {
			env = append(env, kv)
		}
	}
	for k, v := range m.vars() {
		env = append(env, k+"="+v)
	}
	return append(env, extra...)
}

// WriteConfig replaces managed.json in one step, as an MDM agent does.
func (m *Machine) WriteConfig(content string) error {
	tmp := m.Config + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write managed.json: %w", err)
	}
	return os.Rename(tmp, m.Config)
}

// NewSession makes <root>/acct/org/local_<id>/ with the folders Cowork makes and the settings.json
// it writes at session start, and returns the session folder.
func (m *Machine) NewSession(id string) (string, error) { return m.NewSessionIn("acct", "org", id) }

// NewSessionIn is NewSession under the given account and org folders.
func (m *Machine) NewSessionIn(account, org, id string) (string, error) {
	dir := filepath.Join(m.Sessions, account, org, "local_"+id)
	for _, sub := range []string{".claude", "outputs", "uploads"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return "", fmt.Errorf("make session %s: %w", id, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o600); err != nil {
		return "", fmt.Errorf("make session %s: %w", id, err)
	}
	if o := m.Owner; o != nil {
		for _, p := range []string{filepath.Join(m.Sessions, account), filepath.Join(m.Sessions, account, org)} {
			if err := os.Chown(p, o.UID, o.GID); err != nil {
				return "", err
			}
		}
		err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, o.UID, o.GID)
		})
		if err != nil {
			return "", fmt.Errorf("give session %s to its owner: %w", id, err)
		}
	}
	return dir, nil
}

// ExpectedHook is the hook command the daemon's injector writes into the session at dir under
// the machine's managed.json now: the exact entry, not merely text carrying our marker. On a
// machine with an Owner it is the entry the owner's worker writes (naming the worker's channel).
func (m *Machine) ExpectedHook(dir string) (string, error) {
	hooks, err := m.expectedHooks(dir)
	if err != nil {
		return "", err
	}
	return hooks[0], nil
}

// expectedHooks are the entries the daemon may write: on a machine with an Owner, the worker's
// and (from a build before system mode had workers) root's own.
func (m *Machine) expectedHooks(dir string) ([]string, error) {
	vars := m.vars()
	env := managedconfig.Env{GOOS: runtime.GOOS, Home: m.Dir, Getenv: func(k string) string { return vars[k] }}
	paths, err := env.Paths()
	if err != nil {
		return nil, err
	}
	s := managedconfig.NewLoader(env, paths).Load()
	if !s.Enabled() {
		return nil, fmt.Errorf("coworkbridge is not on in %s (%s)", m.Config, s.Origin)
	}
	roots := []string{paths.ChannelRoot()}
	if m.Owner != nil {
		roots = []string{managedconfig.WorkerChannelRoot(runtime.GOOS, m.Owner.Home), paths.ChannelRoot()}
	}
	var hooks []string
	for _, root := range roots {
		channel := filepath.Join(session.ChannelDir(root, filepath.Base(dir)), filepath.FromSlash(session.BridgeDir))
		e, err := hookentry.NewEntry(s.Config, channel)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, e.Command)
	}
	return hooks, nil
}

// WaitHooked waits until the session carries exactly the daemon's current entry and, in enforce
// mode, its lease; it returns the hook command.
func (m *Machine) WaitHooked(dir string, within time.Duration) (string, error) {
	want, err := m.expectedHooks(dir)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(within)
	for {
		data, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
		_, leaseErr := os.Stat(filepath.Join(dir, filepath.FromSlash(session.AliveFile)))
		if got := hookentry.HookCommand(data); slices.Contains(want, got) && (leaseErr == nil || !strings.Contains(got, "mode=enforce")) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("session %s not hooked with the daemon's entry within %v (its hook %q, want %q; lease: %v)",
				filepath.Base(dir), within, hookentry.HookCommand(data), want[0], leaseErr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BashPayload is a PreToolUse payload for a Bash call, as Claude Code sends it.
func BashPayload(command string) []byte {
	input, _ := json.Marshal(map[string]string{"command": command})
	payload, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": "/sessions/x/mnt/outputs",
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": json.RawMessage(input)})
	return payload
}

// hookLimit is how long CallHook lets a hook run, as Claude Code's timeout would: far above any
// decision timeout, so that only a hung hook meets it.
const hookLimit = 2 * time.Minute

// ExecHook runs the hook a drop-in names in exec form (no shell), as Claude Code runs it for a
// session on the Mac, with CLAUDE_CONFIG_DIR naming dir's .claude.
func ExecHook(dir string, argv []string, payload []byte) ([]byte, time.Duration, error) {
	return runHook(dir, argv, payload)
}

// CallHook runs a session's hook as Claude Code does (/bin/sh -c, the payload on stdin, cwd
// outputs/, CLAUDE_CONFIG_DIR naming its .claude) and returns what it printed and how long it took.
func CallHook(dir, hook string, payload []byte) ([]byte, time.Duration, error) {
	return runHook(dir, []string{"/bin/sh", "-c", hook}, payload)
}

// CallHook is the package's CallHook, run as the machine's owner when it has one.
func (m *Machine) CallHook(dir, hook string, payload []byte) ([]byte, time.Duration, error) {
	return runHookAs(m.Owner, dir, []string{"/bin/sh", "-c", hook}, payload)
}

// ExecHook is the package's ExecHook, run as the machine's owner when it has one.
func (m *Machine) ExecHook(dir string, argv []string, payload []byte) ([]byte, time.Duration, error) {
	return runHookAs(m.Owner, dir, argv, payload)
}

func runHook(dir string, argv []string, payload []byte) ([]byte, time.Duration, error) {
	return runHookAs(nil, dir, argv, payload)
}

func runHookAs(o *Owner, dir string, argv []string, payload []byte) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), hookLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if o != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID)}}
	}
	cmd.Dir = filepath.Join(dir, "outputs")
	cmd.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, ".claude"))
	cmd.Stdin = bytes.NewReader(payload)
	started := time.Now()
	out, err := cmd.Output()
	took := time.Since(started)
	if err != nil {
		return out, took, fmt.Errorf("hook in %s: %w", filepath.Base(dir), err)
	}
	return out, took, nil
}

// Daemon is a running `coworkbridge run` on the machine, its log in DaemonLog.
type Daemon struct {
	bin  string
	args []string // of run: --system for system mode
	m    *Machine
	env  []string
	mu   sync.Mutex
	cmd  *exec.Cmd
	run  *run
}

// run is one process of the daemon; exited is closed once it has been waited for, err set.
type run struct {
	exited chan struct{}
	err    error
}

// DaemonLog is where the daemons the machine starts write their log.
func (m *Machine) DaemonLog() string { return filepath.Join(m.Dir, "daemon.log") }

// Start runs bin's daemon on the machine with extra environment ("KEY=value").
func (m *Machine) Start(bin string, extra ...string) (*Daemon, error) {
	d := &Daemon{bin: bin, m: m, env: m.Environ(extra...)}
	return d, d.launch()
}

// StartSystem runs bin's daemon in system mode (run --system, which needs root): its state and
// logs are the machine's, its socket is the platform's unless extra names one
// (COWORKBRIDGE_SOCKET).
func (m *Machine) StartSystem(bin string, extra ...string) (*Daemon, error) {
	d := &Daemon{bin: bin, args: []string{"--system"}, m: m, env: m.Environ(extra...)}
	return d, d.launch()
}

func (d *Daemon) launch() error {
	logf, err := os.OpenFile(d.m.DaemonLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the daemon log: %w", err)
	}
	cmd := exec.Command(d.bin, append([]string{"run"}, d.args...)...)
	cmd.Env, cmd.Stderr = d.env, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s run: %w", d.bin, err)
	}
	r := &run{exited: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		logf.Close()
		close(r.exited)
	}()
	d.mu.Lock()
	d.cmd, d.run = cmd, r
	d.mu.Unlock()
	return nil
}

// PID is the running daemon's process id.
func (d *Daemon) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd.Process.Pid
}

// Process is the running daemon's process, for its resource figures.
func (d *Daemon) Process() *exec.Cmd {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd
}

// Restart kills the daemon with SIGKILL, as a crash would, and starts a new one.
func (d *Daemon) Restart() error {
	d.mu.Lock()
	cmd, r := d.cmd, d.run
	d.mu.Unlock()
	cmd.Process.Kill()
	<-r.exited
	return d.launch()
}

// Stop sends SIGTERM and waits for the daemon to exit, killing it after within. Stopping a daemon
// that has exited returns how it exited.
func (d *Daemon) Stop(within time.Duration) error {
	d.mu.Lock()
	cmd, r := d.cmd, d.run
	d.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return r.err
	case <-time.After(within):
		cmd.Process.Kill()
		<-r.exited
		return fmt.Errorf("the daemon did not stop within %v", within)
	}
}

// LogTail is the end of the daemon log, for a failure message.
func (m *Machine) LogTail(n int) string {
	data, _ := os.ReadFile(m.DaemonLog())
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}
