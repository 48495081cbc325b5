package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/daemon"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var statusNow = time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)

// fixtureSnapshot is what a daemon that has been guarding two sessions for three hours writes.
func fixtureSnapshot(warn bool) *health.Snapshot {
	h := health.New(func() time.Time { return statusNow.Add(-time.Minute) })
	h.SetConfig(health.ConfigState{Path: "/Library/Application Support/CoworkBridge/managed.json", Origin: "file",
		Hash: "a1b2c3d4e5f6", Mode: "enforce", Enabled: true})
	h.Scanned(health.ScanReport{Roots: []string{"/Users/ada/Library/Application Support/Claude/local-agent-mode-sessions"}, Sessions: 2, Live: 2, Watches: 9})
	for _, id := range []string{"local_0a1b", "local_9f8e"} {
		h.SessionSeen(id, "/s/"+id)
		h.SessionHooked(id, false)
	}
	h.Event("local_0a1b", health.Deny, 4*time.Millisecond)
	h.Event("local_9f8e", health.Allow, 3*time.Millisecond)
	h.CLIVersion("local_0a1b", "2.1.329")
	if warn {
		h.CLIVersion("local_9f8e", "2.1.220")
		h.SessionSeen("local_7c7c", "/s/local_7c7c")
		h.SessionHooked("local_7c7c", true)
		h.Count("local_9f8e", health.CodeMalformedLines)
	}
	s := h.Snapshot(false)
	s.Daemon = health.DaemonInfo{PID: 4242, Version: "v0.1.0", StartedAt: statusNow.Add(-3 * time.Hour), UptimeSeconds: 3 * 3600,
		HeartbeatInterval: "5m0s", Goroutines: 14, MaxRSSBytes: 21 << 20, Watches: 9}
	return &s
}

// afterObserveSnapshot is a day that began in observe and switched to enforce.
func afterObserveSnapshot() *health.Snapshot {
	s := fixtureSnapshot(false)
	s.Today.WouldDenies, s.Today.WouldAsks = 7, 12
	return s
}

// failingClosedSnapshot is a daemon given an enforce file it cannot read, with no good copy.
func failingClosedSnapshot() *health.Snapshot {
	s := fixtureSnapshot(false)
	s.Config = health.ConfigState{Path: "/Library/Application Support/CoworkBridge/managed.json", Origin: "invalid", Mode: "enforce",
		Enabled: true, FailingClosed: true, Problem: `decision_timeout: "10 seconds" is not a duration; write it like "10s"`}
	s.Warnings = []health.Warning{{Code: health.CodeConfigInvalid, Severity: health.SeverityError,
		Message: "managed.json is invalid and there is no last good copy", Action: "fix the file"}}
	return s
}

// withRecord is the fixture with the decision log's chain head as a heartbeat published it: ""
// for a log that was empty when checked.
func withRecord(head string, size int64) *health.Snapshot {
	s := fixtureSnapshot(false)
	s.Record = &health.RecordHead{Log: "/Users/ada/Library/Logs/CoworkBridge/decisions.jsonl", Head: head, Size: size,
		CheckedAt: statusNow.Add(-2 * time.Minute)}
	return s
}

// switchedOff is the last snapshot of a daemon that was switched off (cowork_enabled false).
func switchedOff() *health.Snapshot {
	s := fixtureSnapshot(false)
	s.Config.Enabled = false
	return s
}

// withWorkers is root's view of system mode with two users' workers, one of which keeps ending.
func withWorkers() *health.Snapshot {
	s := fixtureSnapshot(false)
	s.Workers = []health.Worker{
		{User: "ada", UID: 501, PID: 433, Running: true, Starts: 1, Watches: 7, Sessions: 2},
		{User: "ben", UID: 502, Running: false, Starts: 4, LastError: "it exited: exit status 1", Watches: 0, Sessions: 0},
	}
	s.Warnings = []health.Warning{{Code: health.CodeWorkerRestarted, Severity: health.SeverityError,
		Message: health.CodeWorkerRestarted.Info().Title, Action: health.CodeWorkerRestarted.Info().Action}}
	return s
}

// lockedDown is the fixture under the drop-in's lockdown.
func lockedDown() *health.Snapshot {
	s := fixtureSnapshot(false)
	s.Config.Lockdown = true
	return s
}

func TestStatusOutputAndExitCodes(t *testing.T) {
	tests := []struct {
		name string
		view statusView
		code int
	}{
		{"healthy", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: fixtureSnapshot(false)}, statusHealthy},
		{"warning", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: fixtureSnapshot(true)}, statusWarning},
		{"stale", statusView{GOOS: "darwin", Now: statusNow.Add(time.Hour), Running: true, Snapshot: fixtureSnapshot(false), Stale: true}, statusWarning},
		{"not-running", statusView{GOOS: "darwin", Now: statusNow, Running: false, Snapshot: fixtureSnapshot(false)}, statusNotRunning},
		{"running-no-snapshot", statusView{GOOS: "darwin", Now: statusNow, Running: true}, statusWarning},
		{"not-running-linux", statusView{GOOS: "linux", Now: statusNow, Running: false}, statusNotRunning},
		{"failing-closed", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: failingClosedSnapshot()}, statusBlocking},
		{"after-observe", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: afterObserveSnapshot()}, statusHealthy},
		{"chain-head", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: withRecord("3f9a0c1d2e4b5a6978c0d1e2f3a4b5c6", 48213)}, statusHealthy},
		{"empty-log", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: withRecord("", 0)}, statusHealthy},
		{"not-running-switched-off", statusView{GOOS: "darwin", Now: statusNow, Running: false, Snapshot: switchedOff()}, statusNotRunning},
		{"lockdown", statusView{GOOS: "darwin", Now: statusNow, Running: true, Snapshot: lockedDown()}, statusHealthy},
		// System mode names its own service, the LaunchDaemon or the system unit, not a user's agent.
		{"system-not-running", statusView{GOOS: "darwin", System: true, Now: statusNow, Running: false}, statusNotRunning},
		// Root's view of system mode lists each user's worker, and says which one keeps ending.
		{"system-workers", statusView{GOOS: "darwin", System: true, Now: statusNow, Running: true, Snapshot: withWorkers()}, statusWarning},
		{"system-not-running-linux", statusView{GOOS: "linux", System: true, Now: statusNow, Running: false}, statusNotRunning},
		{"system-stale-linux", statusView{GOOS: "linux", System: true, Now: statusNow.Add(time.Hour), Running: true, Snapshot: fixtureSnapshot(false), Stale: true}, statusWarning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			tt.view.render(&b)
			golden := filepath.Join("testdata", "status", tt.name+".golden")
			if *update {
				os.WriteFile(golden, b.Bytes(), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update once to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("output differs from %s:\n%s", golden, b.String())
			}
			if code := tt.view.exitCode(); code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
		})
	}
}

func TestStatusFindsTheDaemonByItsLock(t *testing.T) {
	dir := t.TempDir()
	paths := managedconfig.Paths{StateDir: dir, LogDir: dir}
	if v := readStatus(paths, statusNow); v.Running || v.exitCode() != statusNotRunning {
		t.Fatalf("no lock file: %+v", v)
	}
	release, err := daemon.Lock(paths.LockFile())
	if err != nil {
		t.Fatal(err)
	}
	s := fixtureSnapshot(false)
	s.WrittenAt = statusNow
	if err := s.WriteFile(paths.HealthFile()); err != nil {
		t.Fatal(err)
	}
	v := readStatus(paths, statusNow.Add(time.Minute))
	if !v.Running || v.Stale || v.exitCode() != statusHealthy {
		t.Errorf("while locked: running %v stale %v code %d", v.Running, v.Stale, v.exitCode())
	}
	if v := readStatus(paths, statusNow.Add(time.Hour)); !v.Stale || v.exitCode() != statusWarning {
		t.Errorf("an hour-old snapshot must be stale: %+v", v.Stale)
	}
	release()
	if v := readStatus(paths, statusNow); v.Running {
		t.Error("released lock still reads as running")
	}
	// Asking must not get in the way of a daemon starting.
	release, err = daemon.Lock(paths.LockFile())
	if err != nil {
		t.Fatalf("status left the lock held: %v", err)
	}
	release()
}

// Root asking the system daemon about one user sees that user's sessions only, as the user would.
func TestAUsersViewOfTheSystemStatusHoldsTheirSessionsOnly(t *testing.T) {
	s := health.Snapshot{Sessions: []health.Session{{Dir: "/home/ada/s/local_a"}, {Dir: "/home/adam/s/local_b"}, {Dir: "/home/bob/s/local_c"}},
		Record: &health.RecordHead{Log: "/var/log/coworkbridge/decisions.jsonl"}}
	got := forHome(s, "/home/ada")
	if len(got.Sessions) != 1 || got.Sessions[0].Dir != "/home/ada/s/local_a" || got.Record != nil {
		t.Errorf("%+v", got)
	}
	if len(s.Sessions) != 3 {
		t.Error("the snapshot given was changed")
	}
}
