package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
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
