package daemon

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
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

// treeState describes every entry under dir: owner, mode and content.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%d:%d %v", st.Uid, st.Gid, fi.Mode())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			desc += " " + string(b)
		}
		out[p] = desc
		return nil
	})
	return out
}

// A root daemon acts in a user's session only through the session folder: links, a hard link, a
// FIFO and a folder swapped for a link, planted by the session's owner, lead it to read, write,
// chown or remove nothing outside; a plain session beside them is hooked, its files the user's.
func TestASystemDaemonActsInAUsersSessionOnlyThroughItsFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the daemon of system mode")
	}
	const uid, gid = 65534, 65534
	m := newMachine(t)
	m.system(t)
	root := filepath.Join(m.dir, "home", "alex", "sessions")
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":[%q]}`, root)
	outside := filepath.Join(m.dir, "outside")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(outside, "dir"), 0o755))
	for _, f := range []string{"settings.json", "linked.json", "dir/decisions.txt"} {
		must(os.WriteFile(filepath.Join(outside, f), []byte("root's "+f), 0o644))
	}
	plants := map[string]func(dir string){
		"settings linked out": func(dir string) {
			os.Remove(filepath.Join(dir, ".claude", "settings.json"))
			must(os.Symlink(filepath.Join(outside, "settings.json"), filepath.Join(dir, ".claude", "settings.json")))
		},
		".claude linked out": func(dir string) {
			os.RemoveAll(filepath.Join(dir, ".claude"))
			must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(dir, ".claude")))
		},
		"bridge linked out": func(dir string) {
			must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(dir, ".claude", "coworkbridge")))
		},
		"settings hard-linked": func(dir string) {
			os.Remove(filepath.Join(dir, ".claude", "settings.json"))
			must(os.Link(filepath.Join(outside, "linked.json"), filepath.Join(dir, ".claude", "settings.json")))
		},
		"settings a FIFO": func(dir string) {
			os.Remove(filepath.Join(dir, ".claude", "settings.json"))
			must(syscall.Mkfifo(filepath.Join(dir, ".claude", "settings.json"), 0o644))
		},
		"decisions linked out": func(dir string) {
			must(os.MkdirAll(filepath.Join(dir, ".claude", "coworkbridge"), 0o755))
			must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(dir, ".claude", "coworkbridge", "decisions")))
		},
	}
	i := 0
	for _, plant := range plants {
		i++
		dir := m.session(t, root, fmt.Sprintf("plant%d", i))
		plant(dir)
	}
	plain := m.session(t, root, "plain")
	must(filepath.Walk(filepath.Join(m.dir, "home"), func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
	before := treeState(t, outside)
	m.start(t)
	waitHook(t, plain, "enforce")
	// A folder swapped for a link while the daemon follows the session.
	claude := filepath.Join(plain, ".claude")
	must(os.Rename(claude, claude+".old"))
	must(os.Symlink(filepath.Join(outside, "dir"), claude))
	cbtest.WaitForf(t, func() bool { return strings.Contains(m.log.String(), "plain") }, func() string { return "the daemon to see the plain session" })
	cbtest.WaitForf(t, func() bool {
		return strings.Contains(m.log.String(), `"code":"spool_refused","session":"local_plain"`)
	}, func() string { return "the daemon to refuse the swapped folder" })
	after := treeState(t, outside)
	for p, was := range before {
		if after[p] != was {
			t.Errorf("%s outside the sessions changed: was %q, is %q", p, was, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s was made outside the sessions", p)
		}
	}
	fi, err := os.Lstat(filepath.Join(claude+".old", "settings.json"))
	if err == nil && fi.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("the plain session's settings.json belongs to uid %d, not to its user", fi.Sys().(*syscall.Stat_t).Uid)
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

// A user who links a folder above their sessions root to another user's folders does not get
// the other user's sessions followed a second time under their own name: the scan reports the
// alias and leaves it alone, while the user's own sessions are hooked as ever.
func TestASystemDaemonDoesNotFollowAnotherUsersSessionsThroughALinkAboveARoot(t *testing.T) {
	m := newMachine(t)
	m.system(t)
	home := filepath.Join(m.dir, "home")
	own := m.session(t, filepath.Join(home, "Library", "Application Support", "Claude", "local-agent-mode-sessions"), "own")
	victim := filepath.Join(m.dir, "victim", "Claude-3p")
	theirs := m.session(t, filepath.Join(victim, "local-agent-mode-sessions"), "theirs")
	if err := os.Symlink(victim, filepath.Join(home, "Library", "Application Support", "Claude-3p")); err != nil {
		t.Fatal(err)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"observe"}`)
	d, _ := m.start(t)
	waitHook(t, own, "observe")
	cbtest.WaitForf(t, func() bool {
		for _, u := range d.health.Snapshot(false).Scan.Unrecognised {
			if strings.Contains(u, "local_theirs") && strings.Contains(u, "symbolic link") {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("the alias is not reported: %v", d.health.Snapshot(false).Scan.Unrecognised)
	})
	if h := hook(theirs); h != "" {
		t.Errorf("the other user's session was hooked through the alias: %q", h)
	}
}
