package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// unshareWorks reports whether this machine can make mount namespaces (root on Linux).
func unshareWorks() bool {
	return exec.Command("unshare", "-m", "--propagation", "private", "true").Run() == nil
}

// Across a simulated VM boundary (the CLI sees the session only at /sessions/<name>/mnt and the
// host's sessions root is hidden), the hook still finds its folder through CLAUDE_CONFIG_DIR and
// the daemon on the host answers it.
func TestEnforceAcrossASimulatedVMBoundary(t *testing.T) {
	claudeBinary(t)
	if !unshareWorks() {
		t.Skip("unshare -m is not available (needs root on Linux); the VM-boundary variant is skipped")
	}
	if _, err := os.Stat("/sessions"); err != nil {
		t.Cleanup(func() { os.Remove("/sessions") }) // made empty by the namespace script
	}
	d := startDaemon(t, buildCoworkbridge(t), `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	dir := newCoworkSession(t, d.root, "vm1")
	d.waitHooked(t, dir, "enforce")
	// The VM sees neither the host's sessions root nor the daemon's state (the host channels).
	vm := &vmView{Guest: "/sessions/quirky-vm1/mnt", Hide: d.base}
	ok := vm.Guest + "/outputs/ok.txt"
	api := newFakeAPI(t,
		[]toolUse{{Name: "Bash", Input: map[string]any{"command": "ls " + d.root + " | wc -l; git push --force origin main", "description": "push"}}},
		[]toolUse{{Name: "Write", Input: map[string]any{"file_path": ok, "content": "fine\n"}}},
	)
	run := runCLIAs(t, api, dir, vm, nil)
	res := streamToolResults(run)
	if len(res) != 2 || !res[0].IsError || !strings.Contains(res[0].Content, "coworkbridge: rule bash.git-push-force") || res[1].IsError {
		t.Errorf("tool results %+v", res)
	}
	// The write landed through the guest path in the host's session folder.
	if data, err := os.ReadFile(filepath.Join(dir, "outputs", "ok.txt")); err != nil || string(data) != "fine\n" {
		t.Errorf("guest write not visible on the host: %q %v", data, err)
	}
	for _, l := range readSpool(t, dir) {
		if !strings.HasPrefix(l.Event.Cwd, vm.Guest+"/") {
			t.Errorf("event cwd %q: the CLI did not run behind the simulated boundary", l.Event.Cwd)
		}
	}
	recs := d.records(t, 2)
	if !recs[0].Enforced || recs[0].Decision != "deny" || recs[1].Decision != "allow" || recs[0].Transport != "vm-spool" {
		t.Errorf("records %+v", recs)
	}
}
