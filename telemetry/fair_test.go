package telemetry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

// everything reads every record the log holds, in the decision log and the retained log.
func everything(t *testing.T, path string) []Record {
	t.Helper()
	retained, log := Archive(path)
	var out []Record
	for _, name := range append(retained, log...) {
		rs, err := ReadFile(name)
		if err != nil && !strings.Contains(err.Error(), "no such file") {
			t.Fatal(err)
		}
		out = append(out, rs...)
	}
	return out
}

func evictionsOf(rs []Record, session string) (n int, reasons []string) {
	for _, r := range rs {
		if r.Rule == ruleid.Evicted && r.Session == session {
			n++
			reasons = append(reasons, r.Reason)
		}
	}
	return n, reasons
}

// A session staying within any per-session budget can still write many times what the log
// keeps; its records push out only its own, and what it lost is recorded.
func TestASessionsRoutineRecordsOutliveAnotherSessionsFlood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFileBytes: 4 << 10, MaxFiles: 3, Mode: "enforce"})
	writeN(t, l, 0, 5, claudehook.Allow, "quiet")
	writeN(t, l, 100, 400, claudehook.Allow, "flood") // many times what the log keeps
	writeN(t, l, 5, 2, claudehook.Allow, "quiet")
	all := everything(t, path)
	seen := map[string]int{}
	for _, r := range all {
		if r.Session == "quiet" && r.Rule == "" {
			seen[r.RID]++
		}
	}
	for i := range 7 {
		if rid := fmt.Sprintf("%032x", i); seen[rid] != 1 {
			t.Errorf("the quiet session's record %d is held %d times, want once", i, seen[rid])
		}
	}
	n, reasons := evictionsOf(all, "flood")
	if n == 0 {
		t.Fatal("the flood's evictions were not recorded")
	}
	if !strings.Contains(reasons[0], "over its share") {
		t.Errorf("the eviction record says %q", reasons[0])
	}
	if n, _ := evictionsOf(all, "quiet"); n != 0 {
		t.Errorf("the quiet session was reported evicted %d times", n)
	}
	if v := mustVerify(t, Files(RetainedPath(path))); v.Broken != nil {
		t.Errorf("the retained log's chain: %+v", v.Broken)
	}
	if v := mustVerify(t, Files(path)); v.Broken != nil {
		t.Errorf("the decision log's chain: %+v", v.Broken)
	}
}

// When no session holds more than its share, the log filled by fair use and rotates as any log
// does: the oldest routine records go, nothing moves to the retained log, nothing is reported.
func TestFairUseRotatesTheOldestRoutineRecordsAway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFileBytes: 4 << 10, MaxFiles: 3})
	for i := range 300 {
		writeN(t, l, i, 1, claudehook.Allow, fmt.Sprintf("s%d", i%3))
	}
	retained, _ := Archive(path)
	if len(retained) != 0 {
		t.Errorf("routine records of fair use moved to the retained log: %v", retained)
	}
	for _, r := range everything(t, path) {
		if r.Rule == ruleid.Evicted {
			t.Fatalf("fair use reported as an eviction: %+v", r)
		}
	}
}

// The retained class is kept at least the minimum age: the retained log grows past its bound
// rather than drop a younger record, up to four times the bound; once the records are old
// enough, the next rotation brings it back within bounds.
func TestTheRetainedLogKeepsRecordsYoungerThanTheMinimumAge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	now := time.Unix(1_000, 0)
	o := Options{Path: path, MaxFileBytes: 2 << 10, MaxFiles: 2, RetainMinAge: time.Hour, Now: func() time.Time { return now }}
	l := Open(o)
	writeN(t, l, 0, 60, claudehook.Deny, "a")
	retained, _ := Archive(path)
	if len(retained) <= 2 {
		t.Fatalf("the retained log kept to %d files: younger records were dropped", len(retained))
	}
	denies := 0
	for _, r := range everything(t, path) {
		if r.Decision == claudehook.Deny {
			denies++
		}
	}
	if denies != 60 {
		t.Errorf("%d denies held, want all 60", denies)
	}
	now = now.Add(2 * time.Hour)
	writeN(t, l, 1_000_000, 60, claudehook.Deny, "a") // timestamps as old as the others: not the point
	if retained, _ = Archive(path); len(retained) > 4*2 {
		t.Errorf("the retained log has %d files, past its hard bound", len(retained))
	}
}

// At the hard bound, a young record goes after all, and the loss is recorded.
func TestTheRetainedLogsHardBoundIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	now := time.Now()
	o := Options{Path: path, MaxFileBytes: 1 << 10, MaxFiles: 2, RetainMinAge: 24 * time.Hour, Now: func() time.Time { return now }}
	l := Open(o)
	for i := range 400 {
		r := chained(i, claudehook.Deny, "a")
		r.TS = now
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	retained, _ := Archive(path)
	if len(retained) > 4*2 {
		t.Errorf("the retained log has %d files, past its hard bound of 8", len(retained))
	}
	if n, reasons := evictionsOf(everything(t, path), ""); n == 0 || !strings.Contains(reasons[0], "younger than the minimum age") {
		t.Errorf("the loss of young records was not reported: %q", reasons)
	}
}

// A hook writes one record per process: it never pays for a rotation (which reads what each
// session holds) but leaves the record to the daemon.
func TestAWriterThatDoesNotRotateLeavesTheRotationDue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	daemon := Open(Options{Path: path, MaxFileBytes: 1 << 10, MaxFiles: 3})
	hook := Open(Options{Path: path, MaxFileBytes: 1 << 10, MaxFiles: 3, NoRotate: true})
	writeN(t, hook, 0, 3, claudehook.Allow, "a")
	for i := 3; ; i++ {
		err := hook.Write(chained(i, claudehook.Allow, "a"))
		if errors.Is(err, ErrRotationDue) {
			break
		}
		if err != nil || i > 100 {
			t.Fatalf("write %d: %v, want ErrRotationDue once the file is full", i, err)
		}
	}
	if _, err := os.Lstat(path + ".1"); !os.IsNotExist(err) {
		t.Fatal("the hook rotated the log")
	}
	writeN(t, daemon, 1000, 1, claudehook.Allow, "a")
	if _, err := os.Lstat(path + ".1"); err != nil {
		t.Fatalf("the daemon did not rotate the log: %v", err)
	}
}

// BenchmarkRotationWithShares is the cost of one rotation of a log of five 4 MiB files written
// by 50 sessions, one of them flooding: what the writer that rotates holds the lock for. Each
// file is read for its shares once, when it is first met; ns/op is per rotation.
func BenchmarkRotationWithShares(b *testing.B) {
	path := filepath.Join(b.TempDir(), "decisions.jsonl")
	l := Open(Options{Path: path, MaxFileBytes: 4 << 20, MaxFiles: 5})
	rec := func(i int) Record {
		s := "flood"
		if i%2 == 0 {
			s = fmt.Sprintf("s%02d", i%49)
		}
		return chained(i, claudehook.Allow, s)
	}
	i := 0
	rotations := func() int { return len(Files(path)) }
	for rotations() < 5 { // fill the log once
		if err := l.Write(rec(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ResetTimer()
	for range b.N {
		l.mu.Lock()
		if err := l.takeLock(); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := l.rotate(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds()), "µs/rotation")
		l.lock.Unlock()
		l.mu.Unlock()
		b.StopTimer()
		for j := 0; j < 20000; j++ { // refill the new file
			if err := l.Write(rec(i)); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.StartTimer()
	}
}
