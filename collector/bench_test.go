package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// BenchmarkEnforceEventDaemonSide is the daemon's share of one enforce round trip: a line is
// appended, the watcher wakes the collector, the decision file appears. The hook's own cost (its
// processes) is measured by cmd/roundtrip-bench.
func BenchmarkEnforceEventDaemonSide(b *testing.B) {
	f := newFixture(b, managedconfig.Enforce)
	f.start()
	defer f.stop()
	spoolPath := f.bridge("events.jsonl")
	file, err := os.OpenFile(spoolPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	b.ResetTimer()
	for i := range b.N {
		rid := fmt.Sprintf("%032x", i+1)
		file.WriteString(envelope(rid, "enforce", "Bash", bash("ls -la")) + "\n")
		path := filepath.Join(f.bridge("decisions"), rid+".json")
		for {
			if _, err := os.Stat(path); err == nil {
				break
			}
		}
		os.Remove(path)
	}
}

// BenchmarkTranscriptBomb is the attack that starved the daemon: a session whose transcript
// holds tool calls with huge inputs and no results. Each iteration appends one call with an 8 MiB
// input; reconciliation keeps a fingerprint and a bounded preview of it, never the input, so the
// heap after the session is read (reported as heap-MiB, with the bytes written as bomb-MiB) stays
// flat however many calls the session writes.
func BenchmarkTranscriptBomb(b *testing.B) {
	f := newFixture(b, managedconfig.Observe)
	f.start()
	defer f.stop()
	f.transcript(toolUse("toolu_start", "ls")) // the session is followed from here on
	f.idle()
	huge := strings.Repeat("A", 8<<20)
	var written int64
	b.ResetTimer()
	for i := range b.N {
		f.transcript(toolUse(fmt.Sprintf("toolu_%d", i), huge))
		written += 8 << 20
		f.c.scheduleAll(true)
		f.idle()
	}
	b.StopTimer()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(written)/(1<<20), "bomb-MiB")
}

// BenchmarkIdleHousekeeping is what an idle session costs the daemon at each rescan: a
// housekeeping pass of every tracked session (lease renewed, folders swept, instruction files
// and spools looked at, transcripts reconciled) with nothing arriving. It reports µs/session,
// the CPU a rescan costs per idle session (the pass's wall time on one processor).
func BenchmarkIdleHousekeeping(b *testing.B) {
	const sessions = 200
	f := idleSessions(b, sessions)
	b.ResetTimer()
	for range b.N {
		f.settle()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*sessions), "µs/session")
}

// idleSessions is a collector following n sessions that make no call, their first passes done.
func idleSessions(b *testing.B, n int) *fixture {
	f := newFixture(b, managedconfig.Enforce)
	f.start() // stopped by the benchmark's cleanup
	for i := range n - 1 {
		dir := filepath.Join(filepath.Dir(f.dir), fmt.Sprintf("local_idle%03d", i))
		for _, sub := range []string{".claude", "outputs", "uploads"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
				b.Fatal(err)
			}
		}
		f.c.Track(dir)
	}
	f.settle()
	f.settle() // the first passes make each session's folders; the next ones are the idle kind
	return f
}

// BenchmarkCalmRescan is the periodic rescan of BenchmarkIdleHousekeeping's sessions left calm
// (watched whole, nothing arriving) long enough to rest their longest: a rescan housekeeps each
// at every cadence.MaxRest-th only. The figure is the mean over rescans.
func BenchmarkCalmRescan(b *testing.B) {
	const sessions = 200
	f := idleSessions(b, sessions)
	time.Sleep(session.QuietAfter) // what the first passes made has settled
	f.settle()
	rescan := func() {
		f.c.rescan()
		for _, idle := f.c.Passes(); !idle; _, idle = f.c.Passes() {
			runtime.Gosched()
		}
	}
	for range cadence.ToLongest() {
		rescan() // every session calm, resting its longest, each with its own count
	}
	b.ResetTimer()
	for range b.N {
		rescan()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*sessions), "µs/session")
}
