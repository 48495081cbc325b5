package daemon

import (
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hosthook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/privsep"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// rootFor is a system daemon's side of its workers, for ada and bob, with a decision log.
func rootFor(t *testing.T) (*rootSide, privsep.User, privsep.User, string) {
	t.Helper()
	dir := t.TempDir()
	ada := privsep.User{UID: 501, Name: "ada", Home: filepath.Join(dir, "Users", "ada")}
	bob := privsep.User{UID: 502, Name: "bob", Home: filepath.Join(dir, "Users", "bob")}
	logPath := filepath.Join(dir, "decisions.jsonl")
	d := &Daemon{log: slog.New(slog.DiscardHandler), health: health.New(nil), now: time.Now,
		users: func() ([]privsep.User, error) { return []privsep.User{ada, bob}, nil }}
	cfg := managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce, HomeRoots: []string{"sessions"}}
	d.workerPolicy.Store(&hosthook.Serving{Snap: managedconfig.Snapshot{Config: cfg}})
	tlog := telemetry.Open(telemetry.Options{Path: logPath})
	t.Cleanup(func() { tlog.Close() })
	d.watching.Store(&guard{log: tlog})
	return &rootSide{d: d}, ada, bob, logPath
}

// Whatever a worker says of who made its records, they name the user root started it as.
func TestAWorkersRecordsNameItsUserWhateverItSays(t *testing.T) {
	r, ada, _, logPath := rootFor(t)
	if err := r.Record(ada, []telemetry.Record{{RID: "a1", Tool: "Bash", User: "bob"}, {RID: "a2", Tool: "Read"}}, true); err != nil {
		t.Fatal(err)
	}
	recs, err := telemetry.ReadFile(logPath)
	if err != nil || len(recs) != 2 {
		t.Fatalf("records %+v (%v)", recs, err)
	}
	for _, rec := range recs {
		if rec.User != "ada" {
			t.Errorf("record %s names %q, not the worker's user ada", rec.RID, rec.User)
		}
	}
}

// A worker counts only for sessions of its own user's: one it reports outside its user's roots
// is not taken, nor are its notes about a session another user's worker reported.
func TestAWorkerCountsOnlyForItsOwnUsersSessions(t *testing.T) {
	r, ada, bob, _ := rootFor(t)
	r.Health(bob, privsep.HealthNote{Op: "session_seen", ID: "local_b", Dir: filepath.Join(bob.Home, "sessions", "a", "o", "local_b")})
	r.Health(ada, privsep.HealthNote{Op: "session_seen", ID: "local_x", Dir: filepath.Join(bob.Home, "sessions", "a", "o", "local_x")})
	r.Health(ada, privsep.HealthNote{Op: "quarantined", ID: "local_b", Reason: "forged by ada"})
	r.Health(ada, privsep.HealthNote{Op: "count", ID: "", Code: "no_such_code", N: 5})
	s := r.d.health.Snapshot(false)
	if len(s.Sessions) != 1 || s.Sessions[0].ID != "local_b" {
		t.Fatalf("sessions %+v: want bob's only", s.Sessions)
	}
	if !s.Sessions[0].Quarantined.IsZero() {
		t.Errorf("ada's worker quarantined bob's session: %+v", s.Sessions[0])
	}
	for code := range s.Totals.Counts {
		if !code.Known() {
			t.Errorf("a count of an unknown code was taken: %s", code)
		}
	}
}

// What each worker's injector found is added up: status shows every user's sessions, not
// those of the worker that reported last.
func TestTheWorkersScansAreAddedUp(t *testing.T) {
	r, ada, bob, _ := rootFor(t)
	r.Health(ada, privsep.HealthNote{Op: "scanned", Scan: &health.ScanReport{Sessions: 3, Live: 3, Watches: 12}})
	r.Health(bob, privsep.HealthNote{Op: "scanned", Scan: &health.ScanReport{Sessions: 5, Live: 4, Watches: 20}})
	r.Health(ada, privsep.HealthNote{Op: "scanned", Scan: &health.ScanReport{Sessions: 3, Live: 2, Watches: 12}})
	if got := r.d.health.Snapshot(false).Scan; got.Sessions != 8 || got.Live != 6 || got.Watches != 32 {
		t.Errorf("scan %+v: want 8 sessions, 6 live, 32 watches (ada's latest and bob's)", got)
	}
}

// A user forgotten (gone from the Mac, or their worker started again) stops counting: their
// worker's rescans and sessions leave health, the other users' stay, and a session counts again
// once a worker of theirs sees it again.
func TestAGoneUsersScansAndSessionsStopCounting(t *testing.T) {
	r, ada, bob, _ := rootFor(t)
	r.Health(ada, privsep.HealthNote{Op: "session_seen", ID: "local_a", Dir: filepath.Join(ada.Home, "sessions", "a", "o", "local_a")})
	r.Health(bob, privsep.HealthNote{Op: "session_seen", ID: "local_b", Dir: filepath.Join(bob.Home, "sessions", "a", "o", "local_b")})
	r.Health(ada, privsep.HealthNote{Op: "scanned", Scan: &health.ScanReport{Sessions: 3, Live: 3, Watches: 12}})
	r.Health(bob, privsep.HealthNote{Op: "scanned", Scan: &health.ScanReport{Sessions: 5, Live: 4, Watches: 20}})
	r.Forget(bob)
	if got := r.d.health.Snapshot(false).Scan; got.Sessions != 3 || got.Live != 3 || got.Watches != 12 {
		t.Errorf("scan %+v after bob left: want ada's alone (3 sessions, 3 live, 12 watches)", got)
	}
	live := func() (ids []string) {
		for _, s := range r.d.health.Snapshot(false).Sessions {
			if s.Gone.IsZero() {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	if got := live(); !slices.Equal(got, []string{"local_a"}) {
		t.Errorf("sessions not gone %q after bob left, want ada's alone", got)
	}
	r.Health(bob, privsep.HealthNote{Op: "session_hooked", ID: "local_b"})
	if got := live(); !slices.Equal(got, []string{"local_a"}) {
		t.Errorf("a note on a gone user's session counted it again: %q", got)
	}
	// A worker of bob's started again (root forgot what the last one saw) sees the session
	// again in bob's folder: it counts again.
	r.Health(bob, privsep.HealthNote{Op: "session_seen", ID: "local_b", Dir: filepath.Join(bob.Home, "sessions", "a", "o", "local_b")})
	if got := live(); !slices.Equal(got, []string{"local_a", "local_b"}) {
		t.Errorf("sessions not gone %q once bob's new worker saw local_b, want both", got)
	}
}

// A host call's record the log cannot take is kept in the state's drop folder and asks for an
// import at once: it is in the log within a second of the log taking records again, not at the
// next tick of the drop folders' ten-second look.
func TestAHostRecordTheLogCouldNotTakeIsKeptAndAsksForAnImport(t *testing.T) {
	r, _, _, logPath := rootFor(t)
	d := r.d
	d.paths.StateDir = t.TempDir()
	d.dropped = make(chan struct{}, 1)
	d.writeHostBatch(nil) // nothing to write: nothing kept, no import asked for
	select {
	case <-d.dropped:
		t.Fatal("an import was asked for with nothing kept")
	default:
	}
	g := d.watching.Swap(nil) // the guard restarting: the log takes no record now
	hr := hostRecord{rec: telemetry.Record{RID: "0123456789abcdef0123456789abcdef", Tool: "Bash"}, done: make(chan struct{})}
	d.writeHostBatch([]hostRecord{hr})
	<-hr.done
	select {
	case <-d.dropped:
	default:
		t.Fatal("the kept record asked for no import")
	}
	d.watching.Store(g)
	d.importDropped()
	recs, err := telemetry.ReadFile(logPath)
	if err != nil || len(recs) != 1 || recs[0].RID != hr.rec.RID {
		t.Fatalf("the kept record is not in the log after the import: %+v (%v)", recs, err)
	}
}
