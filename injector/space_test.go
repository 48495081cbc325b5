package injector

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// A full sessions volume is invisible in the sessions themselves (the hooks just fail): the scan
// reports it for as long as it lasts.
func TestAFullSessionsVolumeIsReportedUntilItClears(t *testing.T) {
	root := t.TempDir()
	if err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "coworkbridge-test", root).Run(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v", err)
	}
	t.Cleanup(func() { exec.Command("umount", root).Run() })
	makeSession(t, root, "local_v", "{}")
	_, rec := startInjector(t, testConfig(root, managedconfig.Enforce), Options{MinFreeBytes: 256 << 10})
	last := func() []string {
		var low []string
		rec.check(func(r *recorder) bool { low = r.scans[len(r.scans)-1].LowSpace; return true })
		return low
	}
	if low := last(); len(low) != 0 {
		t.Fatalf("an empty volume reported full: %v", low)
	}
	ballast := filepath.Join(root, "ballast") // its creation at the root brings a scan
	os.WriteFile(ballast, bytes.Repeat([]byte("x"), 900<<10), 0o600)
	cbtest.WaitFor(t, "the full volume reported", func() bool { return len(last()) == 1 })
	os.Remove(ballast)
	cbtest.WaitFor(t, "the report cleared", func() bool { return len(last()) == 0 })
}
