package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// runVMAsUser runs the CLI as the user the way the VM loop does: no drop-in (the VM has none),
// the session's own settings, whose hook the user's worker put there and answers.
func (m *systemMac) runVMAsUser(t *testing.T, api *fakeAPI, cliArgs ...string) cliRun {
	t.Helper()
	if _, err := os.Stat("/sessions"); err != nil {
		t.Cleanup(func() { os.Remove("/sessions") }) // made empty by the namespace script
	}
	vm := &vmView{Guest: m.guest(), Hide: m.base}
	return runCLIWith(t, cliVersion, api, m.session, vm, cliArgs, nil,
		"HOME="+m.home, "USER="+m.name, "AS_UID="+strconv.Itoa(m.uid), "AS_GID="+strconv.Itoa(m.gid))
}

// guest is where the VM shows the session.
func (m *systemMac) guest() string { return "/sessions/quirky-" + filepath.Base(m.session) + "/mnt" }

// waitHooked waits for the session's settings to hold our hook in mode.
func (m *systemMac) waitHooked(t *testing.T, dir, mode string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
		if strings.Contains(string(b), "coworkbridge") && strings.Contains(string(b), mode) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session %s was not hooked in %s: %s", dir, mode, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// workers lists the processes running `coworkbridge run --worker`, by uid.
func workers(t *testing.T) map[int][]int {
	t.Helper()
	out := map[int][]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "run\x00--worker") {
			continue
		}
		fi, err := os.Stat(filepath.Dir(p))
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		uid := int(fi.Sys().(*syscall.Stat_t).Uid)
		out[uid] = append(out[uid], pid)
	}
	return out
}

// ownedBy walks dir and names every entry not owned by uid.
func ownedBy(t *testing.T, dir string, uid int) []string {
	t.Helper()
	var bad []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
			bad = append(bad, p)
		}
		return nil
	})
	return bad
}

// In system mode the VM loop is served by the user's worker, running as the user: the hook it
// puts in the session, the spool's offsets, the decision files are all the user's own making (no
// file in the session is root's), and root judges and records each call under the user's name.
func TestSystemModeTheVMLoopIsServedByTheUsersWorkerAsTheUser(t *testing.T) {
	m := newSystemMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","sessions_roots":["SESSIONS"]}`)
	m.waitHooked(t, m.session, "enforce")
	if ws := workers(t); len(ws[m.uid]) != 1 {
		t.Fatalf("workers by uid %v: want one running as the user %d", ws, m.uid)
	}
	pwned, ok := filepath.Join(m.outputs, "pwned"), filepath.Join(m.outputs, "ok.txt")
	api := newFakeAPI(t,
		[]toolUse{{Name: "Bash", Input: map[string]any{"command": "touch " + pwned + " && git push --force origin main", "description": "push"}}},
		[]toolUse{{Name: "Write", Input: map[string]any{"file_path": m.guest() + "/outputs/ok.txt", "content": "fine\n"}}},
	)
	run := m.runVMAsUser(t, api)
	res := streamToolResults(run)
	if len(res) != 2 || !res[0].IsError || !strings.Contains(res[0].Content, "bash.git-push-force") || res[1].IsError {
		t.Fatalf("tool results %+v", res)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("the denied command ran")
	}
	if b, err := os.ReadFile(ok); err != nil || string(b) != "fine\n" {
		t.Errorf("the harmless write did not happen: %q %v", b, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := 0
		for _, r := range m.records(t) {
			if r.Transport == "vm-spool" {
				n++
				if r.User != m.name {
					t.Errorf("a VM-loop record names user %q, not the session's %q", r.User, m.name)
				}
			}
		}
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d VM-loop records, want 2", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if bad := ownedBy(t, m.home, m.uid); len(bad) > 0 {
		t.Errorf("files in the user's home not the user's: %v", bad)
	}
}

// addUser makes another unprivileged user of the Mac, with a home beside the first user's and
// Cowork sessions under ~/sessions (each id a session), all theirs.
func (m *systemMac) addUser(t *testing.T, suffix string, ids ...string) (u macUser) {
	t.Helper()
	u.name = m.name + suffix
	u.home = filepath.Join(m.base, "home", u.name)
	u.uid, u.gid = makeUser(t, u.name, u.home)
	for _, id := range ids {
		u.sessions = append(u.sessions, newCoworkSession(t, filepath.Join(u.home, "sessions"), id))
	}
	must(t, chownTree(u.home, u.uid, u.gid))
	return u
}

type macUser struct {
	name, home string
	uid, gid   int
	sessions   []string
}

// treeOwners describes each entry under dir by owner, mode and (for a file) size; skip names
// subtrees to leave out.
func treeOwners(dir string, skip ...string) map[string]string {
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		st := fi.Sys().(*syscall.Stat_t)
		out[p] = fmt.Sprintf("uid=%d gid=%d mode=%v links=%d", st.Uid, st.Gid, fi.Mode(), st.Nlink)
		return nil
	})
	return out
}

// rootTouches are the traced calls the root daemon itself made on a path under one of homes, and
// how many the workers made there: a worker's lines (each process that ran `run --worker`, and
// the threads it made) are its user's, not root's.
func rootTouches(t *testing.T, trace string, homes ...string) (bad []string, workers int) {
	t.Helper()
	data, err := os.ReadFile(trace)
	must(t, err)
	lines := strings.Split(string(data), "\n")
	// Each thread's maker, from the clone lines ("TID clone3(...) = NEW", or its resumed half).
	parent := map[string]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 2 && strings.Contains(l, "clone") && f[len(f)-2] == "=" {
			parent[f[len(f)-1]] = f[0]
		}
	}
	execs := map[string]bool{} // the threads that ran `run --worker`, and those they made
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "execve(") && strings.Contains(l, `"--worker"`) {
			execs[f[0]] = true
		}
	}
	var isWorker func(tid string, depth int) bool
	isWorker = func(tid string, depth int) bool {
		if execs[tid] {
			return true
		}
		p, ok := parent[tid]
		return ok && depth < 64 && isWorker(p, depth+1)
	}
	workerPIDs := map[string]bool{}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && isWorker(f[0], 0) {
			workerPIDs[f[0]] = true
		}
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		for _, h := range homes {
			if !strings.Contains(l, `"`+h+`/`) && !strings.Contains(l, `"`+h+`"`) {
				continue
			}
			if workerPIDs[f[0]] {
				workers++
			} else {
				bad = append(bad, l)
			}
			break
		}
	}
	return bad, workers
}

// One user attacks the root daemon through everything their own tree offers (hard links to
// root's files, links into another user's sessions, FIFOs and devices where the daemon's side
// reads and writes, a link and a FIFO at sessions roots) while another user's VM-loop calls are
// all answered and recorded under that user. No file outside the attacker's tree changes owner,
// mode or content; the attacker, made after the daemon started, is served within a rescan; and
// the root process itself makes, opens, chowns, renames or removes nothing under any home.
func TestSystemModeOneUsersAttacksStallNoOtherUserAndRootTouchesNoHome(t *testing.T) {
	m := newSystemMacTraced(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","rescan_interval":"2s","sessions_roots":["~/sessions","~/more","~/elsewhere"]}`)
	m.waitHooked(t, m.session, "enforce")

	decoy := filepath.Join(m.base, "decoy")
	must(t, os.WriteFile(decoy, []byte("root's decoy\n"), 0o644))
	eve := m.addUser(t, "x", "plain", "hardlink", "aliasbridge", "aliassettings", "fifos", "device", "fifosettings", "swapped")
	plain, hard, aliasBridge, aliasSettings, fifos, device := eve.sessions[0], eve.sessions[1], eve.sessions[2], eve.sessions[3], eve.sessions[4], eve.sessions[5]
	fifoSettings, swapped := eve.sessions[6], eve.sessions[7]
	// Served within a rescan though made after the daemon started.
	m.waitHooked(t, plain, "enforce")

	victimBridge := filepath.Join(m.session, ".claude", "coworkbridge")
	asEve := func(p string) { must(t, os.Lchown(p, eve.uid, eve.gid)) }
	// Root's own file, hard-linked in at every name the worker writes (a Mac user can do this;
	// Linux's protected hard links would stop the user, so the test plants them as root).
	os.Remove(filepath.Join(hard, ".claude", "settings.json"))
	must(t, os.Link(decoy, filepath.Join(hard, ".claude", "settings.json")))
	must(t, os.MkdirAll(filepath.Join(plain, ".claude", "coworkbridge", "decisions"), 0o755))
	asEve(filepath.Join(plain, ".claude", "coworkbridge"))
	asEve(filepath.Join(plain, ".claude", "coworkbridge", "decisions"))
	for _, name := range []string{"alive", "offsets.json"} {
		p := filepath.Join(plain, ".claude", "coworkbridge", name)
		os.Remove(p)
		must(t, os.Link(decoy, p))
	}
	// Links into the other user's session.
	os.RemoveAll(filepath.Join(aliasBridge, ".claude", "coworkbridge"))
	must(t, os.Symlink(victimBridge, filepath.Join(aliasBridge, ".claude", "coworkbridge")))
	asEve(filepath.Join(aliasBridge, ".claude", "coworkbridge"))
	os.Remove(filepath.Join(aliasSettings, ".claude", "settings.json"))
	must(t, os.Symlink(filepath.Join(m.session, ".claude", "settings.json"), filepath.Join(aliasSettings, ".claude", "settings.json")))
	asEve(filepath.Join(aliasSettings, ".claude", "settings.json"))
	must(t, os.Symlink(filepath.Join(m.home, "sessions", "acct"), filepath.Join(eve.home, "sessions", "alias")))
	asEve(filepath.Join(eve.home, "sessions", "alias"))
	// FIFOs and a device where the worker reads: the spool, the decisions, a transcript folder,
	// and a sessions root.
	fb := filepath.Join(fifos, ".claude", "coworkbridge")
	os.RemoveAll(fb)
	must(t, os.MkdirAll(fb, 0o755))
	asEve(fb)
	for _, p := range []string{filepath.Join(fb, "events.jsonl"), filepath.Join(fb, "decisions"), filepath.Join(fifos, ".claude", "projects")} {
		os.RemoveAll(p)
		must(t, syscall.Mkfifo(p, 0o666))
		asEve(p)
	}
	must(t, syscall.Mkfifo(filepath.Join(eve.home, "more"), 0o666))
	asEve(filepath.Join(eve.home, "more"))
	db := filepath.Join(device, ".claude", "coworkbridge")
	os.RemoveAll(db)
	must(t, os.MkdirAll(db, 0o755))
	asEve(db)
	must(t, syscall.Mknod(filepath.Join(db, "events.jsonl"), syscall.S_IFCHR|0o666, int(1<<8|5))) // /dev/zero's
	// A spool line in each planted session, so that the worker reads and answers there.
	for _, s := range []string{plain, hard, aliasSettings} { // (not through the alias: that is the other user's spool)
		p := filepath.Join(s, ".claude", "coworkbridge", "events.jsonl")
		if f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644); err == nil {
			f.WriteString(`{"v":1,"rid":"0123456789abcdef0123456789abcdef","mode":"enforce","event":{"tool_name":"Bash","tool_input":{"command":"ls"},"hook_event_name":"PreToolUse"}}` + "\n")
			f.Close()
			asEve(p)
		}
	}
	os.Remove(filepath.Join(fifoSettings, ".claude", "settings.json"))
	must(t, syscall.Mkfifo(filepath.Join(fifoSettings, ".claude", "settings.json"), 0o666))
	asEve(filepath.Join(fifoSettings, ".claude", "settings.json"))
	// A sessions root that is itself a link to the other user's sessions.
	must(t, os.Symlink(filepath.Join(m.home, "sessions"), filepath.Join(eve.home, "elsewhere")))
	asEve(filepath.Join(eve.home, "elsewhere"))
	// Every name the worker touches in one session swapped, in a loop, for a hard link to root's
	// file, a link to the other user's same file, a link to /etc/passwd, a FIFO or a file, while
	// the other user works.
	stopSwapping := swapLoop(t, swapped, m.session, decoy, eve)
	defer stopSwapping()
	etc := treeOwners("/etc")
	rootHome := treeOwners("/root", "/root/.cache", "/root/go", "/root/.npm", "/root/.config")
	victimBefore := treeOwners(m.home)
	decoyFi, err := os.Stat(decoy)
	must(t, err)

	// The other user works on, in the VM loop, while the plants are in place.
	var turns [][]toolUse
	for i := range 6 {
		turns = append(turns, []toolUse{{Name: "Write", Input: map[string]any{"file_path": m.guest() + fmt.Sprintf("/outputs/ok%d.txt", i), "content": "fine\n"}}})
		turns = append(turns, []toolUse{{Name: "Bash", Input: map[string]any{"command": "git push --force origin main", "description": "push"}}})
	}
	time.Sleep(3 * time.Second) // a rescan, so that the worker has met every plant
	run := m.runVMAsUser(t, newFakeAPI(t, turns...))
	res := streamToolResults(run)
	if len(res) != len(turns) {
		t.Fatalf("%d results for %d calls: %+v", len(res), len(turns), res)
	}
	for i, r := range res {
		if wantDeny := i%2 == 1; r.IsError != wantDeny || (wantDeny && !strings.Contains(r.Content, "bash.git-push-force")) {
			t.Errorf("call %d of the other user answered %+v", i, r)
		}
	}
	cbtest.WaitForf(t, func() bool {
		n := 0
		for _, r := range m.records(t) {
			if r.Transport == "vm-spool" && r.User == m.name {
				n++
			}
		}
		return n >= len(turns)
	}, func() string { return "every call of the other user recorded under their name" })

	if b, err := os.ReadFile(decoy); err != nil || string(b) != "root's decoy\n" {
		t.Errorf("root's file hard-linked into the attacker's sessions was changed: %q %v", b, err)
	}
	if fi, err := os.Stat(decoy); err != nil || fi.Mode() != decoyFi.Mode() || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("root's file changed owner or mode: %v %v", fi.Mode(), err)
	}
	stopSwapping()
	for _, tree := range []map[string]string{etc, rootHome} {
		for p, was := range tree {
			if is := treeOwners(p)[p]; is != "" && is != was {
				t.Errorf("%s changed: was %s, is %s", p, was, is)
			}
		}
	}
	for p, was := range victimBefore {
		if is, ok := treeOwners(p)[p]; ok && !strings.HasPrefix(is, fmt.Sprintf("uid=%d ", m.uid)) {
			t.Errorf("in the other user's home %s is no longer theirs: was %s, is %s", p, was, is)
		}
	}
	if bad := ownedBy(t, m.home, m.uid); len(bad) > 0 {
		t.Errorf("files in the other user's home not theirs: %v", bad)
	}
	m.stop()
	bad, byWorkers := rootTouches(t, m.trace, m.home, eve.home)
	if len(bad) > 0 {
		t.Errorf("the root process touched users' homes %d times, first: %s", len(bad), strings.Join(bad[:min(len(bad), 5)], "\n"))
	}
	if byWorkers == 0 {
		t.Error("the trace shows no worker at work in the homes: it cannot tell root's calls from the workers'")
	}
}

// envFlood starts the test binary as a flooder of the socket it names (see flood).
const envFlood = "COWORKBRIDGE_E2E_FLOOD"

// flood attacks a system daemon's socket as the user it runs as, until killed: connections held
// open saying nothing (a slowloris), connections made and dropped as fast as it can, and a
// 200 MB request.
func flood(sock string) {
	big, err := net.Dial("unix", sock) // first, so that it holds one of the user's slots
	if err == nil {
		go func() {
			chunk := []byte(`{"v":1,"kind":"call","payload":{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", 1<<20))
			for range 200 {
				if _, err := big.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	held := make(chan net.Conn, 300) // kept open, saying nothing, until the process is killed
	for range cap(held) {
		if c, err := net.Dial("unix", sock); err == nil {
			held <- c
		}
	}
	for range 4 { // enough to fill a shared backlog, leaving the suite's other packages some CPU
		go func() {
			for {
				if c, err := net.Dial("unix", sock); err == nil {
					c.Close()
				}
			}
		}()
	}
	select {}
}

// A connect flood, a slowloris and a 200 MB request from one user deny none of another user's
// host calls at the socket: each is answered as the policy says and recorded under that user;
// the oversized request is refused unread and recorded under the attacker.
func TestSystemModeOneUsersSocketFloodDeniesNoOtherUsersCalls(t *testing.T) {
	m := newSystemMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,"sessions_roots":["SESSIONS"]}`)
	eve := m.addUser(t, "f")
	self, err := os.Executable()
	must(t, err)
	floodBin := filepath.Join(m.base, "bin", "flood.test")
	must(t, copyFile(self, floodBin, 0o755))
	f := exec.Command(floodBin)
	f.Env = []string{envFlood + "=" + m.sock}
	f.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(eve.uid), Gid: uint32(eve.gid)}}
	must(t, f.Start())
	t.Cleanup(func() { f.Process.Kill(); f.Wait() })
	time.Sleep(time.Second) // the flood under way

	var turns [][]toolUse
	for i := range 6 {
		turns = append(turns, []toolUse{{Name: "Write", Input: map[string]any{"file_path": filepath.Join(m.outputs, fmt.Sprintf("ok%d.txt", i)), "content": "fine\n"}}})
		turns = append(turns, []toolUse{{Name: "Bash", Input: map[string]any{"command": "git push --force origin main", "description": "push"}}})
	}
	res := streamToolResults(m.runAsUser(t, newFakeAPI(t, turns...)))
	if len(res) != len(turns) {
		t.Fatalf("%d results for %d calls", len(res), len(turns))
	}
	for i, r := range res {
		if wantDeny := i%2 == 1; r.IsError != wantDeny || (wantDeny && !strings.Contains(r.Content, "bash.git-push-force")) {
			t.Errorf("call %d of the other user under the flood answered %+v", i, r)
		}
	}
	var mine, oversized int
	cbtest.WaitForf(t, func() bool {
		mine, oversized = 0, 0
		for _, r := range m.records(t) {
			switch {
			case r.Transport == "host-socket" && r.User == m.name:
				mine++
			case r.Rule == "coworkbridge.oversized" && r.User == eve.name:
				oversized++
			}
		}
		return mine >= len(turns) && oversized >= 1
	}, func() string {
		return fmt.Sprintf("%d of %d calls recorded under %s, %d oversized requests under %s", mine, len(turns), m.name, oversized, eve.name)
	})
}

// swapLoop swaps, until stopped, each name a worker touches in the attacker's session at dir for
// a hard link to root's decoy, a link to the same name in the victim's session, a link to
// /etc/passwd, a FIFO or a file of the attacker's; stop waits for the loop to end.
func swapLoop(t *testing.T, dir, victim, decoy string, eve macUser) (stop func()) {
	t.Helper()
	names := []string{".claude/settings.json", ".claude/coworkbridge/events.jsonl", ".claude/coworkbridge/alive",
		".claude/coworkbridge/staging", ".claude/coworkbridge/decisions", ".claude/projects"}
	for _, d := range []string{".claude/coworkbridge"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
		os.Lchown(filepath.Join(dir, d), eve.uid, eve.gid)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			for _, n := range names {
				p := filepath.Join(dir, filepath.FromSlash(n))
				os.RemoveAll(p)
				switch i % 5 {
				case 0:
					os.Link(decoy, p) // root's own file: its owner stays root's
				case 1:
					os.Symlink(filepath.Join(victim, filepath.FromSlash(n)), p)
					os.Lchown(p, eve.uid, eve.gid)
				case 2:
					os.Symlink("/etc/passwd", p)
					os.Lchown(p, eve.uid, eve.gid)
				case 3:
					syscall.Mkfifo(p, 0o666)
					os.Lchown(p, eve.uid, eve.gid)
				case 4:
					os.WriteFile(p, []byte("{}"), 0o644)
					os.Lchown(p, eve.uid, eve.gid)
				}
			}
			time.Sleep(100 * time.Millisecond) // each name a new thing ten times a second: the worker meets every kind
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}
