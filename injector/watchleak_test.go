package injector

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// inotifyWatches counts the inotify watches this process holds, as the kernel sees them.
func inotifyWatches(t *testing.T) int {
	t.Helper()
	fds, err := filepath.Glob("/proc/self/fdinfo/*")
	if err != nil || len(fds) == 0 {
		t.Skip("no /proc/self/fdinfo here")
	}
	n := 0
	for _, fd := range fds {
		data, _ := os.ReadFile(fd)
		n += bytes.Count(data, []byte("inotify wd:"))
	}
	return n
}

// Deleting session trees, each under its own account and org folders, must give back every watch
// they took: the table matches the kernel's and returns to where it started.
func TestDeletedSessionTreesGiveBackTheirWatches(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts inotify watches through /proc")
	}
	root := filepath.Join(t.TempDir(), "sessions")
	os.MkdirAll(root, 0o755)
	in, _ := startInjector(t, testConfig(root, managedconfig.Observe), Options{})
	before := in.Watches()
	const trees = 40
	for i := range trees {
		dir := filepath.Join(root, fmt.Sprintf("acct%d", i), fmt.Sprintf("org%d", i), fmt.Sprintf("local_%d", i))
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o600) // as Cowork does
		cbtest.WaitFor(t, "hooked", func() bool { return strings.Contains(settingsOf(dir), hookentry.Marker) })
	}
	if grown := in.Watches(); grown < before+trees*4 {
		t.Fatalf("%d watches with %d trees, want at least %d", grown, trees, before+trees*4)
	}
	for i := range trees {
		os.RemoveAll(filepath.Join(root, fmt.Sprintf("acct%d", i)))
	}
	cbtest.WaitFor(t, "watches given back", func() bool { return in.Watches() == before })
	cbtest.WaitFor(t, "the table matching the kernel", func() bool { return inotifyWatches(t) == in.Watches() })
}

// Cowork creates a session's account and org folders and the session folder in one go, and its
// .claude a moment later: the session is hooked at once, not at the next rescan (an hour here).
// The fake delivers a change only where a watch is, as the kernel does: the new folders must be
// watched by the time .claude appears.
func TestASessionUnderNewParentFoldersIsHookedWhenItsClaudeFolderAppears(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "sessions")
		os.MkdirAll(root, 0o755)
		w := fswatch.NewFake()
		startInjector(t, testConfig(root, managedconfig.Observe), Options{Watcher: w.Opener()})
		dir := filepath.Join(root, "newacct", "neworg", "local_late")
		os.MkdirAll(dir, 0o755)
		if !w.Change(filepath.Join(root, "newacct"), fswatch.Create) {
			t.Fatal("the sessions root is not watched")
		}
		time.Sleep(time.Second) // the structural rescan has passed; .claude is not there yet
		synctest.Wait()
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		if !w.Change(filepath.Join(dir, ".claude"), fswatch.Create) {
			t.Fatal("the new session folder is not watched: its .claude would be seen only at the rescan")
		}
		os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644)
		w.Change(filepath.Join(dir, ".claude", "settings.json"), fswatch.Create)
		time.Sleep(time.Second) // a new session's first write may be held half a second
		synctest.Wait()
		if !hasMode(dir, managedconfig.Observe) {
			t.Fatal("the late session was not hooked within a second, long before the rescan")
		}
	})
}

// Cowork deletes a session with the equivalent of rm -rf. The daemon must not put settings.json
// or our folder back while that runs: the removal would fail (the folder not empty) and leave a
// ghost session, hooked. This covers a removal faster than the restore's settle; removal_test.go
// has the slower ones.
func TestAFastRemovalOfASessionIsNotUndone(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	const n = 30
	var dirs []string
	for i := range n {
		dir := makeSession(t, root, fmt.Sprintf("local_rm%d", i), "{}")
		os.MkdirAll(filepath.Join(dir, "outputs"), 0o755)
		dirs = append(dirs, dir)
	}
	_, rec := startInjector(t, testConfig(root, managedconfig.Enforce), Options{})
	for _, d := range dirs {
		cbtest.WaitFor(t, "hooked", func() bool { return hasMode(d, managedconfig.Enforce) })
		os.MkdirAll(filepath.Join(d, ".claude", "coworkbridge", "decisions"), 0o700) // as the collector makes it
	}
	failed := 0
	for _, d := range dirs {
		if out, err := exec.Command("rm", "-rf", d).CombinedOutput(); err != nil {
			failed++
			t.Logf("rm -rf %s: %v %s", filepath.Base(d), err, out)
		}
	}
	// The injector forgets a session only once it is gone; one it put back (a ghost) never is.
	cbtest.WaitForf(t, func() bool {
		return rec.check(func(r *recorder) bool {
			for _, d := range dirs {
				if !r.gone[filepath.Base(d)] {
					return false
				}
			}
			return true
		})
	}, func() string { return "not every removed session was reported gone" })
	ghosts := 0
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			ghosts++
		}
	}
	if failed > 0 || ghosts > 0 {
		t.Errorf("%d of %d removals failed and %d sessions came back", failed, n, ghosts)
	}
}
