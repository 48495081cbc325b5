package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

// VM loop: an agent's process answers a request before the daemon does. It cannot be prevented
// there; it is recorded and the session quarantined.
func TestAForgedDecisionInTheSessionIsDetectedRecordedAndQuarantines(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	// The daemon's own decisions are not suspects.
	own := f.nextRID()
	f.appendRaw(envelope(own, "enforce", "Bash", bash("ls")) + "\n")
	f.decision(own)
	f.waitRecords(1)

	forged := f.nextRID()
	if err := os.WriteFile(f.bridge(filepath.Join("decisions", forged+".json")), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	recs := f.waitRecords(2)
	if recs[1].Rule != ruleid.ForgedDecision || recs[1].RID != forged || recs[1].Decision != "deny" {
		t.Fatalf("detection record %+v", recs[1])
	}
	if f.health.count("quarantined") != 1 {
		t.Error("the session was not quarantined")
	}
	next := f.nextRID()
	f.appendRaw(envelope(next, "enforce", "Bash", bash("ls")) + "\n")
	if got := f.decision(next); !strings.Contains(got, "quarantined") {
		t.Errorf("the next call's decision %q", got)
	}
	f.waitRecords(3)
	f.idle()
	if recs := f.records(); len(recs) != 3 {
		t.Errorf("%d records, want 3: the daemon's own decisions were taken for forgeries:%s", len(recs), describe(recs))
	}
}

func TestAPlantedLeaseIsReplacedAtOnceAndQuarantines(t *testing.T) {
	plants := map[string]func(t *testing.T, p string){
		"a FIFO":            func(t *testing.T, p string) { syscall.Mkfifo(p, 0o600) },
		"a link":            func(t *testing.T, p string) { os.Symlink("/dev/zero", p) },
		"a sparse gigabyte": func(t *testing.T, p string) { fh, _ := os.Create(p); fh.Truncate(1 << 30); fh.Close() },
		"a lease for ever":  func(t *testing.T, p string) { os.WriteFile(p, []byte("99999999999\n"), 0o600) },
		"a lease dated for ever": func(t *testing.T, p string) {
			// Content within our lease, but dated so that every hook would take it as running.
			os.WriteFile(p, []byte(strconv.FormatInt(time.Now().Add(5*time.Second).Unix(), 10)+"\n"), 0o600)
			os.Chtimes(p, time.Now(), time.Now().Add(24*time.Hour))
		},
		"a hard link": func(t *testing.T, p string) {
			// A lease that looks like ours, shared with a file outside the session: the daemon's
			// renewal must neither trust it nor write through it.
			outside := filepath.Join(t.TempDir(), "lease")
			os.WriteFile(outside, []byte(strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10)+"\n"), 0o600)
			if err := os.Link(outside, p); err != nil {
				t.Skip("hard links unavailable here:", err)
			}
		},
	}
	// The same file changed where it stands, not a new one renamed over it: the lease keeps its
	// identity, so only its change time tells the daemon to read it again.
	inPlace := map[string]func(t *testing.T, p string){
		"rewritten in place for ever": func(t *testing.T, p string) { os.WriteFile(p, []byte("99999999999\n"), 0o600) },
		"redated in place for ever":   func(t *testing.T, p string) { os.Chtimes(p, time.Now(), time.Now().Add(24*time.Hour)) },
	}
	for name, plant := range inPlace {
		plants[name] = plant
	}
	for name, plant := range plants {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, managedconfig.Enforce)
			f.start()
			// After the first pass (its record is in), so the plant cannot race the lease's
			// first write, which would simply replace it unseen.
			first := f.nextRID()
			f.appendRaw(envelope(first, "enforce", "Bash", bash("ls")) + "\n")
			f.waitRecords(1)
			f.idle()
			p := f.bridge("alive")
			if inPlace[name] != nil {
				f.settle() // a housekeeping pass has checked the lease since it was written
				plant(t, p)
			} else {
				tmp := f.bridge(".plant")
				plant(t, tmp)
				if err := os.Rename(tmp, p); err != nil {
					t.Fatal(err)
				}
			}
			cbtest.WaitForf(t, func() bool {
				fi, err := os.Lstat(p)
				if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64 {
					return false
				}
				data, _ := os.ReadFile(p)
				n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
				return n > time.Now().Unix() && n <= time.Now().Add((cadence.MaxRest+2)*f.cfg.RescanInterval+time.Minute).Unix()
			}, func() string { return "the planted lease was not replaced by ours" })
			recs := f.waitRecords(2)
			if recs[1].Rule != ruleid.PlantedLease {
				t.Errorf("record %+v", recs[1])
			}
			if f.health.count("quarantined") == 0 {
				t.Error("not quarantined")
			}
		})
	}
}

// idle waits until the start-up passes, which renew the lease, are done: a plant that lands
// while they write would be replaced unseen.
func (f *fixture) idle() {
	f.t.Helper()
	f.settle()
}

func TestASpoolLineReusingARecordedRequestIDIsAForgery(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "enforce", "Bash", bash("rm -rf ~")) + "\n")
	f.decision(rid)
	f.waitRecords(1)
	os.Remove(f.bridge(filepath.Join("decisions", rid+".json"))) // the hook took its answer
	f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
	recs := f.waitRecords(2)
	if recs[1].Rule != ruleid.DuplicateRID || recs[1].RID != rid {
		t.Fatalf("record %+v", recs[1])
	}
	if f.health.count("quarantined") != 1 {
		t.Error("not quarantined")
	}
	f.settle()
	if _, err := os.Stat(f.bridge(filepath.Join("decisions", rid+".json"))); err == nil {
		t.Error("a second decision was written for a request already answered")
	}
}

// Replacing .claude/coworkbridge drops the watch on the old folder; the new one is watched at
// once (the fixture's rescan is an hour away), and the lease is back in it.
func TestAReplacedBridgeFolderIsWatchedAtOnce(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	f.idle()
	if err := os.Rename(f.bridge(""), f.bridge("")+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.bridge(""), 0o700); err != nil {
		t.Fatal(err)
	}
	cbtest.WaitForf(t, func() bool { _, err := os.Stat(f.bridge("alive")); return err == nil }, func() string { return "no lease in the new folder" })
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "enforce", "Bash", bash("rm -rf ~")) + "\n")
	if decisionOf(t, f.decision(rid)) != "deny" {
		t.Error("the new folder's spool was not answered")
	}
}

// A rescan landing while Cowork deletes the session must not put our folder or the lease back
// after the removal took them: the last rmdir would fail and leave a ghost session.
func TestARescanDuringASessionsRemovalDoesNotRecreateOurFolder(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	proj := filepath.Join(f.dir, ".claude", "projects", "slug")
	os.MkdirAll(proj, 0o700)
	for i := range 100 {
		os.WriteFile(filepath.Join(proj, fmt.Sprintf("t%03d.jsonl", i)), []byte("{}\n"), 0o600)
	}
	f.start()
	f.idle()
	rescanned := false
	err := cbtest.RemoveTree(f.dir, func(rel string) {
		if strings.HasPrefix(rel, ".claude/projects/") {
			if !rescanned {
				f.settle() // the rescan tick, with our folder already gone, and its pass done
				rescanned = true
			}
		}
	})
	if err != nil {
		t.Fatalf("the removal failed: %v", err)
	}
}
