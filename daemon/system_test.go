package daemon

import (
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/privsep"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// systemMachine is m in system mode: root's folders (here under m.dir), a socket, and the homes
// of the users served.
func (m *machine) system(t *testing.T) (sock, logPath string) {
	t.Helper()
	vars := map[string]string{
		managedconfig.EnvManagedConfig: m.config,
		managedconfig.EnvStateDir:      filepath.Join(m.dir, "root", "state"),
		managedconfig.EnvLogDir:        filepath.Join(m.dir, "root", "logs"),
		managedconfig.EnvSocket:        filepath.Join(m.dir, "run", "hook.sock"),
	}
	m.env = managedconfig.Env{GOOS: "linux", Home: m.dir, Getenv: func(k string) string { return vars[k] },
		System: true, Homes: []string{filepath.Join(m.dir, "home")}}
	m.users = func() ([]privsep.User, error) { return nil, nil }
	return vars[managedconfig.EnvSocket], filepath.Join(m.dir, "root", "logs", "decisions.jsonl")
}

// listening waits for the daemon's socket.
func listening(t *testing.T, sock string) {
	t.Helper()
	cbtest.WaitForf(t, func() bool {
		fi, err := os.Lstat(sock)
		return err == nil && fi.Mode()&fs.ModeSocket != 0
	}, func() string { return "the daemon to listen at " + sock })
}

const rmRF = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"},"tool_use_id":"toolu_9"}`

func TestASystemDaemonJudgesHostCallsUnderTheCallersUidAndKeepsItsFoldersToItself(t *testing.T) {
	m := newMachine(t)
	sock, logPath := m.system(t)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	me, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Skip("this uid has no user entry:", err)
	}
	// A record a hook dropped while the daemon was down is imported under its file's owner.
	drops := filepath.Join(m.dir, "root", "dropbox")
	if err := os.MkdirAll(drops, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := telemetry.Drop(drops, telemetry.Record{RID: strings.Repeat("d", 32), Tool: "Read", User: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	listening(t, sock)

	a, err := hostsocket.Call(sock, hostsocket.Request{Kind: hostsocket.KindCall, Payload: json.RawMessage(rmRF)}, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(a.Output), `"permissionDecision":"deny"`) {
		t.Fatalf("answer %s, want a deny", a.Output)
	}
	var recs []telemetry.Record
	cbtest.WaitForf(t, func() bool {
		recs, _ = telemetry.ReadFile(logPath)
		return len(recs) >= 2
	}, func() string { return "two records (the dropped one and the call) in " + logPath })
	byTransport := map[string]telemetry.Record{}
	for _, r := range recs {
		byTransport[r.Transport] = r
	}
	if r := byTransport[telemetry.TransportSocket]; r.User != me.Username || r.ToolUseID != "toolu_9" || r.Rule != "bash.git-push-force" {
		t.Errorf("the socket call's record %+v, want user %s", r, me.Username)
	}
	if r := byTransport[telemetry.TransportDropped]; r.User != me.Username {
		t.Errorf("the dropped record names user %q, want the file's owner %s", r.User, me.Username)
	}
	for dir, want := range map[string]fs.FileMode{"root/state": 0o700, "root/logs": 0o700, "root/dropbox": 0o733 | fs.ModeSticky} {
		fi, err := os.Stat(filepath.Join(m.dir, dir))
		if err != nil || fi.Mode()&(fs.ModePerm|fs.ModeSticky) != want {
			t.Errorf("%s: mode %v (%v), want %v", dir, fi.Mode(), err, want)
		}
	}

	a, err = hostsocket.Call(sock, hostsocket.Request{Kind: hostsocket.KindStatus}, time.Now().Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var snap health.Snapshot
	if err := json.Unmarshal(a.Status, &snap); err != nil || snap.Daemon.PID != os.Getpid() || !snap.Config.Enabled {
		t.Fatalf("status over the socket: %+v (%v)", snap.Daemon, err)
	}
}

func TestASystemDaemonAnswersOffWhileCoworkbridgeIsSwitchedOff(t *testing.T) {
	m := newMachine(t)
	sock, _ := m.system(t)
	m.writeConfig(t, `{"version":1,"cowork_enabled":false}`)
	m.start(t)
	listening(t, sock)
	a, err := hostsocket.Call(sock, hostsocket.Request{Kind: hostsocket.KindCall, Payload: json.RawMessage(rmRF)}, time.Now().Add(5*time.Second))
	if err != nil || !a.Off || len(a.Output) != 0 {
		t.Fatalf("answer %+v (%v), want off", a, err)
	}
}

func TestASystemDaemonOpensItsLogsToTheReadGroupAlone(t *testing.T) {
	m := newMachine(t)
	m.system(t)
	g, err := user.LookupGroupId(strconv.Itoa(os.Getgid()))
	if err != nil {
		t.Skip("this gid has no group entry:", err)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe","telemetry":{"read_group":%q}}`, g.Name)
	m.start(t)
	logs := filepath.Join(m.dir, "root", "logs")
	cbtest.WaitForf(t, func() bool {
		fi, err := os.Stat(filepath.Join(logs, "decisions.jsonl"))
		return err == nil && fi.Mode().Perm() == 0o640
	}, func() string { return "the decision log readable by the group" })
	fi, err := os.Stat(logs)
	if err != nil || fi.Mode().Perm() != 0o750 || int(fi.Sys().(*syscall.Stat_t).Gid) != os.Getgid() {
		t.Fatalf("log folder %v (%v), want 0750 and group %s", fi.Mode(), err, g.Name)
	}
	if fi, _ := os.Stat(filepath.Join(m.dir, "root", "state")); fi.Mode().Perm() != 0o700 {
		t.Errorf("the state folder is %v; the read group is for the logs only", fi.Mode().Perm())
	}
}

// A request larger than the socket takes is refused without being read whole: in enforce a deny,
// and a record under the caller naming the limit.
func TestASystemDaemonRefusesAnOversizedRequestUnreadAndRecordsIt(t *testing.T) {
	m := newMachine(t)
	sock, logPath := m.system(t)
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	me, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Skip("this uid has no user entry:", err)
	}
	m.start(t)
	listening(t, sock)
	huge := `{"v":1,"kind":"call","payload":{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", 40<<20) + `"}}}`
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { c.Write([]byte(huge)); c.(*net.UnixConn).CloseWrite() }()
	io.Copy(io.Discard, c) // the answer, or a reset: the record below is what counts
	var recs []telemetry.Record
	cbtest.WaitForf(t, func() bool {
		recs, _ = telemetry.ReadFile(logPath)
		return len(recs) >= 1
	}, func() string { return "a record of the oversized call in " + logPath })
	r := recs[0]
	if r.Rule != ruleid.Oversized || r.Decision != claudehook.Deny || !r.Enforced || r.User != me.Username ||
		r.Transport != telemetry.TransportSocket || !strings.Contains(r.Reason, strconv.Itoa(hostsocket.MaxRequest)) {
		t.Errorf("record %+v; want an enforced deny under %s, rule %s, naming the limit", r, me.Username, ruleid.Oversized)
	}
}

// Every user's hook can reach the drop folder: its parent, made 0700 beside the state, lets
// users pass (never list or write), and the state and logs stay root's alone.
func TestEveryUserCanReachTheDropFolderAndNothingElse(t *testing.T) {
	base := filepath.Join(t.TempDir(), "coworkbridge")
	p := managedconfig.Paths{StateDir: filepath.Join(base, "state"), LogDir: filepath.Join(base, "logs"), DropDir: filepath.Join(base, "dropbox")}
	if err := systemFolders(p); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]fs.FileMode{base: 0o711, p.StateDir: 0o700, p.LogDir: 0o700, p.DropDir: 0o1733} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := fi.Mode().Perm()
		if fi.Mode()&fs.ModeSticky != 0 {
			got |= 0o1000
		}
		if got != want {
			t.Errorf("%s: mode %o, want %o", dir, got, want)
		}
	}
}
