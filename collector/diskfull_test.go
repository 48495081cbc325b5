package collector

import (
	"errors"
	"sync"
	"testing"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// roomSink is a decision log on a disk with room for a given number of records: a batch larger
// than the room left fails whole, as a write that hits ENOSPC is cut back to its last line.
type roomSink struct {
	*telemetry.Log
	mu   sync.Mutex
	room int // records that still fit; negative: no limit
}

func (s *roomSink) WriteBatch(rs []telemetry.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.room >= 0 && len(rs) > s.room {
		return errors.New("no space left on device (simulated)")
	}
	if s.room >= 0 {
		s.room -= len(rs)
	}
	return s.Log.WriteBatch(rs)
}

func (s *roomSink) setRoom(n int) { s.mu.Lock(); s.room = n; s.mu.Unlock() }

// After a full disk, the admin frees a little space: the retry writes what fits, one record and
// then more, instead of retrying the whole backlog in one write that can never fit again.
func TestRetriesAfterAFullDiskAreSizedToTheSpaceFreed(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	sink := &roomSink{Log: f.sink.Log, room: 0}
	f.opts.Sink = sink
	f.start()
	var rids []string
	for range 40 {
		rid := f.nextRID()
		rids = append(rids, rid)
		f.appendRaw(envelope(rid, "observe", "Bash", bash("ls")) + "\n")
	}
	cbtest.WaitForf(t, func() bool { return f.health.count(string(health.CodeTelemetryFailed)) > 0 }, func() string { return "the full disk was never met" })
	sink.setRoom(10)
	cbtest.WaitForf(t, func() bool { return len(f.records()) == 10 }, func() string {
		return "the space freed for 10 records was not used"
	})
	sink.setRoom(-1)
	f.waitRecords(40)
	f.settle()
	assertEachOnce(t, f.records(), rids)
}
