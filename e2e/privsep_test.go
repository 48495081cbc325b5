package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
