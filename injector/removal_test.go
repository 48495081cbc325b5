package injector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// populate gives a session what a used one holds: a transcript folder with many files (slow to
// delete), our folder, outputs and the audit log beside them.
func populate(t *testing.T, dir string, transcripts int) {
	t.Helper()
	proj := filepath.Join(dir, ".claude", "projects", "-sessions-x-mnt-outputs")
	for _, d := range []string{proj, filepath.Join(dir, ".claude", "coworkbridge", "decisions"), filepath.Join(dir, "outputs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range transcripts {
		os.WriteFile(filepath.Join(proj, fmt.Sprintf("t%03d.jsonl", i)), []byte("{}\n"), 0o600)
	}
	os.WriteFile(filepath.Join(dir, "audit.jsonl"), []byte("{}\n"), 0o600)
}

// Cowork deletes a session depth first. When the transcripts after settings.json take a while,
// the repair of the vanished settings.json (due 50 ms after it goes) must wait for the removal
// to finish: put back, it makes the last rmdir fail and leaves a ghost session, hooked.
func TestASlowRemovalOfASessionIsNotUndone(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	dir := makeSession(t, root, "local_slow", "{}")
	populate(t, dir, 100)
	_, rec := startInjector(t, testConfig(root, managedconfig.Enforce), Options{})
	cbtest.WaitFor(t, "hooked", func() bool { return hasMode(dir, managedconfig.Enforce) })

	err := cbtest.RemoveTree(dir, func(rel string) {
		if strings.HasPrefix(rel, ".claude/projects/") {
			time.Sleep(2 * time.Millisecond) // 100 files: 200 ms with no event the daemon sees
		}
	})
	if err != nil {
		t.Fatalf("the removal failed: %v", err)
	}
	// The injector forgets a session only once it is gone; one it put back is never gone.
	cbtest.WaitFor(t, "the session reported gone", func() bool {
		return rec.check(func(r *recorder) bool { return r.gone[filepath.Base(dir)] })
	})
	if _, err := os.Lstat(dir); err == nil {
		t.Error("the session came back")
	}
}

// The attack that held disableAllHooks in place for 86% of 40 s: the agent writes it into
// settings.json again and again while it removes files in its own .claude in bursts that stop just
// long enough to end and start again. A repair swaps the file in place and never waits, so the
// switch is gone as soon as each write is handled; deleting settings.json instead keeps it away for
// at most one hold of session.RemovalHold in the session's life.
func TestRestartingRemovalBurstsCannotHoldOffTheRepair(t *testing.T) {
	for _, attack := range []string{"rewrite", "delete"} {
		t.Run(attack, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				root := filepath.Join(t.TempDir(), "sessions")
				dir := makeSession(t, root, "local_burst", "{}")
				w := fswatch.NewFake()
				startInjector(t, testConfig(root, managedconfig.Enforce), Options{Watcher: w.Opener()})
				if !hasMode(dir, managedconfig.Enforce) {
					t.Fatal("setup: not hooked")
				}
				settings := filepath.Join(dir, ".claude", "settings.json")
				proj := filepath.Join(dir, ".claude", "projects") // a removal that counts: the transcripts
				const step = 100 * time.Millisecond
				cycle := session.RemovalHold + session.RemovalQuiet + step
				unguarded := time.Duration(0)
				for at := time.Duration(0); at < 40*time.Second; at += step {
					if at%cycle < session.RemovalHold {
						os.MkdirAll(proj, 0o700)
						os.Remove(proj)
						w.Change(proj, fswatch.Remove)
					}
					if at%time.Second == 0 {
						if attack == "rewrite" {
							os.WriteFile(settings, []byte(`{"disableAllHooks": true}`), 0o600)
							w.Change(settings, fswatch.Write)
						} else if os.Remove(settings) == nil {
							w.Change(settings, fswatch.Remove)
						}
					}
					synctest.Wait()
					if !hasMode(dir, managedconfig.Enforce) || strings.Contains(settingsOf(dir), "disableAllHooks") {
						unguarded += step
					}
					time.Sleep(step)
				}
				limit := time.Duration(0)
				if attack == "delete" {
					limit = session.RemovalHold
				}
				t.Logf("%s: without our hook for %v of 40s", attack, unguarded)
				if unguarded > limit {
					t.Errorf("settings.json was without our hook for %v of 40s, want at most %v", unguarded, limit)
				}
			})
		})
	}
}

// The injector's own write to settings.json raises an event that may be handled only after a
// removal has begun and taken the files: that late ensure must not put them back at once.
func TestAHookedSessionsFilesFoundGoneAreNotPutBackAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "sessions")
		dir := makeSession(t, root, "local_late", "{}")
		in, err := New(testConfig(root, managedconfig.Enforce), Options{})
		if err != nil {
			t.Fatal(err)
		}
		in.ensure(dir, "local_late", reasonNew) // hooked, our folder made
		if !hasMode(dir, managedconfig.Enforce) {
			t.Fatal("setup: not hooked")
		}
		// The removal runs; none of its events has been handled.
		os.RemoveAll(filepath.Join(dir, ".claude", "coworkbridge"))
		os.Remove(filepath.Join(dir, ".claude", "settings.json"))
		in.ensure(dir, "local_late", reasonChange)
		for _, p := range []string{"settings.json", "coworkbridge"} {
			if _, err := os.Lstat(filepath.Join(dir, ".claude", p)); err == nil {
				t.Errorf("%s was put back at once", p)
			}
		}
		if !in.pending[dir] {
			t.Error("the session is not pending: it would never be looked at again before the rescan")
		}
		time.Sleep(session.RemovalQuiet)
		in.flushPending()
		if !hasMode(dir, managedconfig.Enforce) {
			t.Error("not a removal after all: settings.json was not put back after the hold")
		}
	})
}

// The CLI makes and removes lock and temporary files in .claude all the time (at each start): they
// are no sign of a removal, and must not hold a repair back.
func TestTheCLIsOwnTemporaryFilesDoNotHoldARepair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "sessions")
		dir := makeSession(t, root, "local_cli", "{}")
		removals := session.NewRemovals(nil)
		w := fswatch.NewFake()
		startInjector(t, testConfig(root, managedconfig.Enforce), Options{Removals: removals, Watcher: w.Opener()})
		if !hasMode(dir, managedconfig.Enforce) {
			t.Fatal("not hooked at the first scan")
		}
		for i := range 20 {
			lock := filepath.Join(dir, ".claude", fmt.Sprintf(".claude.json.lock%d", i))
			os.WriteFile(lock, nil, 0o600)
			w.Change(lock, fswatch.Create)
			os.Remove(lock)
			if !w.Change(lock, fswatch.Remove) {
				t.Fatal(".claude is not watched")
			}
		}
		if wait := removals.Wait(dir); wait > 0 {
			t.Errorf("lock files held writes back for %v", wait)
		}
		settings := filepath.Join(dir, ".claude", "settings.json")
		os.WriteFile(settings, []byte("{}"), 0o600) // our entry gone
		w.Change(settings, fswatch.Write)
		synctest.Wait()
		if !hasMode(dir, managedconfig.Enforce) {
			t.Error("not repaired at once")
		}
	})
}

// A repair that fails is reported as a failure: the session is unhooked in health, not counted
// as hooked with nothing done.
func TestAFailedRepairIsReportedNotTakenForSuccess(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	dir := makeSession(t, root, "local_fifo", "{}")
	rec := newRecorder()
	in, err := New(testConfig(root, managedconfig.Enforce), Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	in.ensure(dir, "local_fifo", reasonNew)
	if !rec.check(func(r *recorder) bool { return r.hooked["local_fifo"] }) {
		t.Fatal("setup: not hooked")
	}
	// Our decisions folder turned into a file: the repair cannot prepare the folder it needs.
	decisions := filepath.Join(dir, ".claude", "coworkbridge", "decisions")
	os.RemoveAll(decisions)
	if err := os.WriteFile(decisions, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.ensure(dir, "local_fifo", reasonChange)
	if rec.check(func(r *recorder) bool { return r.hooked["local_fifo"] }) {
		t.Error("a repair that could not prepare our folder was reported as hooked")
	}
}
