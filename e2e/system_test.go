package e2e

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// systemMac is a Mac in system mode: coworkbridge runs as root (as CI does) with its record,
// state and socket in root's folders, and the agent runs as an unprivileged user made for the
// test, with a home holding a Cowork session. The CLI reads the system drop-in from /etc (an
// overlay in its own mount namespace) and runs as that user.
type systemMac struct {
	base, home, session, outputs string
	rootDir, logs, state, run    string
	sock, config, bin, claude    string
	name, trace                  string
	uid, gid                     int
	upper                        string
	daemon                       *exec.Cmd
	daemonOut                    *bytes.Buffer
}

func newSystemMac(t *testing.T, cfgJSON string) *systemMac {
	t.Helper()
	return newSystemMacWith(t, cfgJSON, false)
}

func newSystemMacWith(t *testing.T, cfgJSON string, traced bool) *systemMac {
	t.Helper()
	claude := claudeBinary(t)
	if os.Geteuid() != 0 || !unshareWorks() {
		t.Skip("system mode needs root and unshare -m (the daemon is root, the agent another user)")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd is not available: no unprivileged user can be made")
	}
	m := &systemMac{base: t.TempDir(), claude: claude}
	openPath(t, m.base)
	m.name = fmt.Sprintf("cbe2e%08x", crc32.ChecksumIEEE([]byte(m.base))) // one per test: a user lingers while its processes do
	m.home = filepath.Join(m.base, "home", m.name)
	m.uid, m.gid = makeUser(t, m.name, m.home)
	sessions := filepath.Join(m.home, "sessions")
	m.session = newCoworkSession(t, sessions, "system1")
	m.outputs = filepath.Join(m.session, "outputs")
	must(t, chownTree(m.home, m.uid, m.gid))

	m.rootDir = filepath.Join(m.base, "root")
	m.state, m.logs = filepath.Join(m.rootDir, "state"), filepath.Join(m.rootDir, "logs")
	m.run = filepath.Join(m.base, "run")
	m.sock = filepath.Join(m.run, "hook.sock")
	must(t, os.MkdirAll(m.rootDir, 0o755))
	binDir := filepath.Join(m.base, "bin")
	must(t, os.MkdirAll(binDir, 0o755))
	m.bin = filepath.Join(binDir, "coworkbridge")
	must(t, copyFile(buildCoworkbridge(t), m.bin, 0o755))
	must(t, copyFile(buildHookProgram(t, "coworkbridge-hook"), dropin.HookProgram(m.bin), 0o755))
	must(t, os.WriteFile(filepath.Join(binDir, "claude"), nil, 0o755)) // where the CLI is bound

	if traced {
		m.trace = filepath.Join(m.base, "daemon.strace")
	}
	m.config = filepath.Join(m.base, "managed.json")
	cfgJSON = strings.Replace(cfgJSON, "SESSIONS", sessions, 1)
	must(t, os.WriteFile(m.config, []byte(cfgJSON), 0o644))
	m.writeDropIn(t, cfgJSON)
	m.start(t)
	return m
}

// newSystemMacTraced is newSystemMac with the daemon run under strace, its file system calls
// (and its children's, each line naming the process) written to m.trace.
func newSystemMacTraced(t *testing.T, cfgJSON string) *systemMac {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("COWORKBRIDGE_E2E") == "require" {
			t.Fatal("strace is not installed; .ci/run installs it")
		}
		t.Skip("strace is not installed")
	}
	return newSystemMacWith(t, cfgJSON, true)
}

// makeUser adds the unprivileged user name with home (made here), removed when the test ends,
// and returns their uid and gid.
func makeUser(t *testing.T, name, home string) (uid, gid int) {
	t.Helper()
	must(t, os.MkdirAll(home, 0o755))
	if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", home, "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", "-f", name).Run() })
	u, err := user.Lookup(name)
	must(t, err)
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// openPath lets every user through the folders down to dir (t.TempDir's are root's, 0700).
func openPath(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755))
	}
}

func chownTree(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func copyFile(from, to string, perm os.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, perm)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (m *systemMac) writeDropIn(t *testing.T, cfgJSON string) {
	t.Helper()
	env := managedconfig.Env{GOOS: "linux", Home: m.home, Getenv: func(string) string { return "" }}
	paths, err := env.Paths()
	must(t, err)
	cfg, err := managedconfig.Parse([]byte(cfgJSON), m.config, env, paths)
	must(t, err)
	sc, err := settingsschema.New()
	must(t, err)
	data, err := dropin.Content(dropin.Hook{Exe: m.bin, System: true}, cfg, sc)
	must(t, err)
	m.upper = filepath.Join(m.base, "etc-upper")
	must(t, dropin.Write(filepath.Join(m.upper, "claude-code", "managed-settings.d"), data))
}

// overrides are the development overrides of this Mac, for the daemon and the hook alike.
func (m *systemMac) overrides() []string {
	// The people under this Mac's home folder only: another test's Mac on this host (or another
	// go test of the project beside this one) has users of its own, served by its own daemon.
	return []string{managedconfig.EnvManagedConfig + "=" + m.config, managedconfig.EnvStateDir + "=" + m.state,
		managedconfig.EnvLogDir + "=" + m.logs, managedconfig.EnvSocket + "=" + m.sock,
		managedconfig.EnvPeopleUnder + "=" + filepath.Join(m.base, "home")}
}

func (m *systemMac) start(t *testing.T) {
	t.Helper()
	m.daemon = exec.Command(m.bin, "run", "--system")
	if m.trace != "" {
		m.daemon = exec.Command("strace", "-f", "-qq", "-o", m.trace, "-e", "trace="+tracedCalls, m.bin, "run", "--system")
	}
	m.daemon.Env = append(os.Environ(), m.overrides()...)
	m.daemonOut = &bytes.Buffer{}
	m.daemon.Stdout, m.daemon.Stderr = m.daemonOut, m.daemonOut
	must(t, m.daemon.Start())
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("daemon log:\n%s", lastLines(m.daemonOut.String(), 30))
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if fi, err := os.Lstat(m.sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the system daemon did not listen at %s", m.sock)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tracedCalls are the system calls by which a process makes, opens, changes the owner of,
// renames or removes a file, and those that make threads and processes (to tell whose each
// thread is).
const tracedCalls = "clone,clone3,fork,vfork,open,openat,creat,mkdir,mkdirat,chown,fchown,lchown,fchownat,rename,renameat,renameat2,unlink,unlinkat,link,linkat,symlink,symlinkat,mknodat,truncate,execve"

func (m *systemMac) stop() {
	if m.daemon == nil || m.daemon.ProcessState != nil {
		return
	}
	pid := m.daemon.Process.Pid
	if m.trace != "" {
		pid = m.daemonPID()
	}
	syscall.Kill(pid, syscall.SIGTERM)
	m.daemon.Wait()
}

// daemonPID is the daemon's own process: under strace, strace's child running `run --system`.
func (m *systemMac) daemonPID() int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "run\x00--system") || strings.HasPrefix(string(b), "strace") {
			continue
		}
		st, err := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if f := strings.Fields(string(st)); err == nil && len(f) > 3 && f[3] == strconv.Itoa(m.daemon.Process.Pid) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return m.daemon.Process.Pid
}

// runAsUser runs the CLI in the session as the unprivileged user, with the system drop-in.
// cliArgs are more of the CLI's arguments.
func (m *systemMac) runAsUser(t *testing.T, api *fakeAPI, cliArgs ...string) cliRun {
	t.Helper()
	work := filepath.Join(m.base, "overlay-work")
	os.RemoveAll(work)
	must(t, os.MkdirAll(work, 0o755))
	at := filepath.Join(m.base, "bin", "claude")
	wrap := `set -e
mount -t overlay coworkbridge-e2e-etc -o lowerdir=/etc,upperdir="$UPPER",workdir="$WORK" /etc
mount --bind "$1" "$CLAUDE_AT"
shift
exec setpriv --reuid="$AS_UID" --regid="$AS_GID" --init-groups "$CLAUDE_AT" "$@"`
	env := append([]string{"UPPER=" + m.upper, "WORK=" + work, "CLAUDE_AT=" + at,
		"AS_UID=" + strconv.Itoa(m.uid), "AS_GID=" + strconv.Itoa(m.gid), "HOME=" + m.home, "USER=" + m.name}, m.overrides()...)
	return runCLIWith(t, cliVersion, api, m.session, nil, cliArgs, []string{"unshare", "-m", "--propagation", "private", "sh", "-c", wrap, "sh"}, env...)
}

// records reads the decision log as root.
func (m *systemMac) records(t *testing.T) []telemetry.Record {
	t.Helper()
	recs, err := telemetry.ReadFile(filepath.Join(m.logs, "decisions.jsonl"))
	must(t, err)
	return recs
}

// snapshot lists root's folders with each entry's identity, owner, mode and size.
func (m *systemMac) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range []string{m.rootDir, m.run} {
		filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			out[p] = fmt.Sprintf("uid=%d mode=%v", st.Uid, fi.Mode())
			if !fi.Mode().IsRegular() {
				// A folder or the socket is the same one; a file may be rewritten by the daemon
				// itself (atomically: a new inode), but never becomes another owner's.
				out[p] += fmt.Sprintf(" ino=%d", st.Ino)
			}
			return nil
		})
	}
	return out
}

// Under any spelling, with every tool the CLI has, an agent running as the user can neither read
// nor change nor cut, link, lock or replace the decision log, the state, the health snapshot or
// the socket of a root daemon: the kernel refuses it, whatever the classifier would have said (the
// Mac is in observe, so every call runs). Every call is still judged and recorded through the
// socket under the user the kernel names.
func TestSystemModeTheAgentsIdentityCannotTouchTheRecordStateOrSocket(t *testing.T) {
	m := newSystemMac(t, `{"version":1,"cowork_enabled":true,"mode":"observe","lockdown":true,"sessions_roots":["SESSIONS"]}`)
	must(t, os.WriteFile(filepath.Join(m.state, "marker"), []byte("root's"), 0o600))
	// A call first, so that the log, its lock and the health snapshot exist to be attacked.
	api := newFakeAPI(t, []toolUse{{Name: "Bash", Input: map[string]any{"command": "true", "description": "warm up"}}})
	m.runAsUser(t, api)
	before := m.snapshot(t)
	logBefore, err := os.ReadFile(filepath.Join(m.logs, "decisions.jsonl"))
	must(t, err)

	R, out := m.rootDir, m.outputs
	bash := func(cmd string) []toolUse {
		return []toolUse{{Name: "Bash", Input: map[string]any{"command": cmd, "description": "attack"}}}
	}
	turns := [][]toolUse{
		{{Name: "Read", Input: map[string]any{"file_path": filepath.Join(m.logs, "decisions.jsonl")}}},
		{{Name: "Write", Input: map[string]any{"file_path": filepath.Join(m.state, "health.json"), "content": "{}"}}},
		{{Name: "Edit", Input: map[string]any{"file_path": filepath.Join(m.state, "marker"), "old_string": "root's", "new_string": "mine"}}},
		bash("cat " + R + "/logs/decisions.jsonl > " + out + "/leak1.txt"),
		bash(`d=$(ls -d ` + filepath.Dir(R) + `/r*t/lo*); cat "$d"/d* > ` + out + `/leak2.txt; cp "$d"/decisions.jsonl ` + out + `/leak3.txt`),
		bash("ln -sf /dev/null " + R + "/logs/decisions.jsonl; ln " + R + "/logs/decisions.jsonl " + out + "/hard; mkfifo " + R + "/logs/decisions.jsonl"),
		bash("mv " + R + "/logs " + R + "/logs-old; rm -rf " + R + "/state " + R + "/logs; mv " + R + " " + R + "-old"),
		bash("echo '{}' > " + R + "/state/health.json; : > " + R + "/state/offsets.json; chmod 777 " + R + "/state"),
		bash("flock -n " + R + "/logs/decisions.jsonl.lock sleep 1; flock -n " + R + "/state/daemon.lock sleep 1; ls -la " + R + "/dropbox > " + out + "/drop.txt"),
		bash("rm -f " + m.sock + "; mv " + m.run + " " + m.run + "-old; ln -s /tmp " + m.run + "/x; : > " + m.sock),
	}
	api = newFakeAPI(t, turns...)
	// The CLI's own permission checks let everything through: only the kernel stands in the way.
	run := m.runAsUser(t, api, "--permission-mode", "bypassPermissions")

	after := m.snapshot(t)
	for p, was := range before {
		if p == filepath.Join(m.logs, "decisions.jsonl") || p == filepath.Join(m.state, "health.json") ||
			strings.Contains(p, "/receipts/") {
			continue // the daemon's own churn: records and heartbeats (checked below), receipts taken
		}
		if after[p] != was {
			t.Errorf("%s changed: was %s, is %q", p, was, after[p])
		}
	}
	if b, _ := os.ReadFile(filepath.Join(m.state, "marker")); string(b) != "root's" {
		t.Errorf("root's state file was changed to %q", b)
	}
	logAfter, err := os.ReadFile(filepath.Join(m.logs, "decisions.jsonl"))
	must(t, err)
	if !bytes.HasPrefix(logAfter, logBefore) {
		t.Error("the decision log's earlier records were changed")
	}
	files, _ := filepath.Glob(filepath.Join(m.logs, "decisions.jsonl*"))
	for _, f := range files {
		if strings.Contains(f, ".refused-") {
			t.Errorf("something was planted at the log's name: %s", f)
		}
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(out, e.Name()))
		if bytes.Contains(b, []byte(`"schema"`)) || bytes.Contains(b, []byte("decisions.jsonl")) {
			t.Errorf("the agent got the record out into %s: %.200s", e.Name(), b)
		}
	}
	results := streamToolResults(run)
	if len(results) != len(turns) {
		t.Fatalf("%d tool results for %d calls", len(results), len(turns))
	}
	// Observe blocks nothing: each attack ran, and the kernel refused it.
	refused := 0
	for _, res := range results {
		if strings.Contains(res.Content, "ermission denied") || strings.Contains(res.Content, "EACCES") {
			refused++
		}
	}
	if refused < len(turns)-2 {
		t.Errorf("only %d of %d attacks were refused by the kernel: %+v", refused, len(turns), results)
	}
	byID := map[string]telemetry.Record{}
	for _, r := range m.records(t) {
		byID[r.ToolUseID] = r
	}
	for _, res := range results {
		r, ok := byID[res.ToolUseID]
		if !ok || r.Transport != "host-socket" || r.User != m.name {
			t.Errorf("call %s recorded as %+v (found %v); want through the socket under user %s", res.ToolUseID, r, ok, m.name)
		}
	}
	// The daemon made the session's settings, as root, and gave them to the user.
	fi, err := os.Stat(filepath.Join(m.session, ".claude", "settings.json"))
	if err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) != m.uid {
		t.Errorf("the session's settings.json belongs to uid %d, not to the session's user %d", fi.Sys().(*syscall.Stat_t).Uid, m.uid)
	}
	// The chain still verifies from its first record.
	v, err := telemetry.Verify([]string{filepath.Join(m.logs, "decisions.jsonl")})
	if err != nil || v.Broken != nil {
		t.Errorf("the decision log's chain: %+v %v", v, err)
	}
}

// In enforce the socket's answer is obeyed (a dangerous call denied, a harmless one let be), and
// with the daemon stopped the hook denies by itself, naming why.
func TestSystemModeEnforceJudgesThroughTheSocketAndFailsClosedWithoutTheDaemon(t *testing.T) {
	m := newSystemMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":["SESSIONS"]}`)
	pwned, ok := filepath.Join(m.outputs, "pwned"), filepath.Join(m.outputs, "ok.txt")
	api := newFakeAPI(t,
		[]toolUse{{Name: "Bash", Input: map[string]any{"command": "touch " + pwned + " && git push --force origin main", "description": "push"}}},
		[]toolUse{{Name: "Write", Input: map[string]any{"file_path": ok, "content": "fine\n"}}},
	)
	run := m.runAsUser(t, api)
	if _, err := os.Stat(pwned); err == nil {
		t.Error("the denied command ran")
	}
	if b, err := os.ReadFile(ok); err != nil || string(b) != "fine\n" {
		t.Errorf("the harmless write did not happen: %q %v", b, err)
	}
	res := streamToolResults(run)
	if len(res) != 2 || !res[0].IsError || !strings.Contains(res[0].Content, "bash.git-push-force") || res[1].IsError {
		t.Errorf("tool results %+v", res)
	}
	socketRecords := 0
	for _, r := range m.records(t) {
		if r.Transport == "host-socket" && r.User == m.name {
			socketRecords++
		}
	}
	if socketRecords != 2 {
		t.Errorf("%d records through the socket under %s, want 2", socketRecords, m.name)
	}

	m.stop()
	later := filepath.Join(m.outputs, "later.txt")
	api = newFakeAPI(t, []toolUse{{Name: "Write", Input: map[string]any{"file_path": later, "content": "x"}}})
	run = m.runAsUser(t, api)
	if _, err := os.Stat(later); err == nil {
		t.Error("with the daemon stopped, a call ran")
	}
	res = streamToolResults(run)
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "daemon could not judge") {
		t.Errorf("with the daemon stopped: %+v", res)
	}
}

// In observe, a call made while the system daemon is down is let run and leaves its record in
// the drop folder, which the daemon imports when it is back: even where root's folder was made
// 0700 around it, as a fresh machine makes it.
func TestSystemModeObserveLeavesARecordWhileTheDaemonIsDown(t *testing.T) {
	m := newSystemMac(t, `{"version":1,"cowork_enabled":true,"mode":"observe","lockdown":true,"sessions_roots":["SESSIONS"]}`)
	m.stop()
	must(t, os.Chmod(m.rootDir, 0o700))
	m.start(t) // tightens its folders again, and lets users reach the drop folder
	m.stop()
	later := filepath.Join(m.outputs, "later.txt")
	run := m.runAsUser(t, newFakeAPI(t, []toolUse{{Name: "Write", Input: map[string]any{"file_path": later, "content": "x"}}}))
	if res := streamToolResults(run); len(res) != 1 || res[0].IsError {
		t.Fatalf("in observe with the daemon down: %+v", res)
	}
	m.start(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, r := range m.records(t) {
			if r.Transport == telemetry.TransportDropped && r.Tool == "Write" {
				return
			}
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Join(m.rootDir, "dropbox"))
			t.Fatalf("no dropped record of the call was imported (dropbox holds %d entries)", len(entries))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
