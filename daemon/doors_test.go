package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// socketDaemon is a system daemon's socket side alone, serving in enforce, its records queued.
func socketDaemon(t *testing.T) *Daemon {
	t.Helper()
	d := &Daemon{log: slog.New(slog.DiscardHandler), health: health.New(time.Now), env: managedconfig.Env{GOOS: "linux"},
		paths: managedconfig.Paths{StateDir: t.TempDir()}, hostRecs: make(chan hostRecord, 4)}
	sv := &serving{on: true, snap: managedconfig.Snapshot{Config: managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce}}}
	d.serving.Store(sv)
	return d
}

const lsCall = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_ls"}`

// A failure serving one user's call, outside the judgement too, is an error answer (the hook then
// judges alone and, in enforce, denies); the daemon that serves every user goes on.
func TestAPanicServingAHostCallIsAnErrorAnswerNotTheDaemonsEnd(t *testing.T) {
	d := socketDaemon(t)
	h := &hostCalls{d: d} // no callers to judge with: a nil dereference
	a := h.Serve(context.Background(), hostsocket.Peer{UID: uint32(os.Getuid())}, hostsocket.Request{Kind: hostsocket.KindCall, Payload: json.RawMessage(lsCall)})
	if !strings.Contains(a.Error, "the daemon failed on this call") || len(a.Output) != 0 {
		t.Fatalf("answer %+v, want an error", a)
	}
	if n := d.health.Snapshot(false).Totals.Counts[health.CodeHostCallFailed]; n != 1 {
		t.Errorf("host_call_failed counted %d times", n)
	}
}

// A socket call is answered only once its record is written: killed between the two, the daemon
// would otherwise leave a call let run with no record, and a socket call has no spool to replay.
// While another caller writes, the call waits for that one to write its record too.
func TestAHostCallIsAnsweredOnlyAfterItsRecordIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := socketDaemon(t)
		d.hostWriting.Lock() // another caller is writing
		answered := make(chan struct{})
		go func() {
			d.recordHostCall(context.Background(), telemetry.Record{RID: "r1"})
			close(answered)
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-answered:
			t.Fatal("answered before the record was written")
		default:
		}
		hrs := d.takeHostRecords() // that caller, before letting go, takes what came meanwhile
		if len(hrs) != 1 || hrs[0].rec.RID != "r1" {
			t.Fatalf("queued %+v, want r1", hrs)
		}
		close(hrs[0].done)
		d.hostWriting.Unlock()
		synctest.Wait()
		select {
		case <-answered:
		default:
			t.Fatal("not answered once the record was written")
		}
	})
}

// A call that finds no other caller writing writes its record itself before it is answered, with
// no other goroutine involved.
func TestAHostCallAloneWritesItsOwnRecord(t *testing.T) {
	d, logPath := socketDaemonWithLog(t)
	d.recordHostCall(context.Background(), telemetry.Record{RID: "0123456789abcdef0123456789abcdef", Tool: "Bash"})
	recs, err := telemetry.ReadFile(logPath)
	if err != nil || len(recs) != 1 {
		t.Fatalf("the record is not in the log when the call is answered: %+v (%v)", recs, err)
	}
	if n := len(d.hostRecs); n != 0 {
		t.Errorf("%d records left queued", n)
	}
}

// Many callers at once: each is answered without waiting out recordWait (a record queued while
// another caller wrote is written by that one before it lets go), every record is in the log
// once, and none is left queued.
func TestConcurrentHostCallsEachHaveTheirRecordWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, logPath := socketDaemonWithLog(t)
		const callers, calls = 8, 50
		start := time.Now()
		var wg sync.WaitGroup
		for c := range callers {
			wg.Go(func() {
				for i := range calls {
					d.recordHostCall(context.Background(), telemetry.Record{RID: fmt.Sprintf("%016x%016x", c, i), Tool: "Bash"})
				}
			})
		}
		wg.Wait()
		if waited := time.Since(start); waited != 0 {
			t.Errorf("a call waited out its record's timeout (%v in all): a record was left queued", waited)
		}
		recs, err := telemetry.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if seen[r.RID] {
				t.Errorf("record %s written twice", r.RID)
			}
			seen[r.RID] = true
		}
		if len(seen) != callers*calls || len(d.hostRecs) != 0 {
			t.Errorf("%d records in the log, %d left queued; want %d and none", len(seen), len(d.hostRecs), callers*calls)
		}
	})
}

// socketDaemonWithLog is socketDaemon with a decision log to write the records in.
// Records left queued when the socket stops (more than one batch of them) are written before
// the log closes, each once, and their callers released.
func TestRecordsLeftQueuedAtStopAreWrittenBeforeTheLogCloses(t *testing.T) {
	d, logPath := socketDaemonWithLog(t)
	var left []hostRecord
	for i := range hostBatch + 3 {
		hr := hostRecord{rec: telemetry.Record{RID: fmt.Sprintf("%032x", i), Tool: "Bash"}, done: make(chan struct{})}
		d.hostRecs <- hr
		left = append(left, hr)
	}
	d.drainHostRecords()
	recs, err := telemetry.ReadFile(logPath)
	if err != nil || len(recs) != len(left) || len(d.hostRecs) != 0 {
		t.Fatalf("%d records in the log (%v), %d left queued; want %d and none", len(recs), err, len(d.hostRecs), len(left))
	}
	for _, hr := range left {
		select {
		case <-hr.done:
		default:
			t.Fatalf("the caller of %s was never released", hr.rec.RID)
		}
	}
}

func socketDaemonWithLog(t *testing.T) (*Daemon, string) {
	t.Helper()
	d := socketDaemon(t)
	d.hostRecs = make(chan hostRecord, hostRecordQueue)
	logPath := filepath.Join(t.TempDir(), "decisions.jsonl")
	tlog := telemetry.Open(telemetry.Options{Path: logPath})
	t.Cleanup(func() { tlog.Close() })
	d.watching.Store(&guard{log: tlog})
	return d, logPath
}

// A writer that does not get to the record in time does not hold the answer past recordWait.
func TestAHostCallWaitsForItsRecordAtMostRecordWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := socketDaemon(t)
		d.hostWriting.Lock() // another caller is writing, and slow
		defer d.hostWriting.Unlock()
		start := time.Now()
		d.recordHostCall(context.Background(), telemetry.Record{RID: "r1"})
		if waited := time.Since(start); waited != recordWait {
			t.Errorf("waited %v, want %v", waited, recordWait)
		}
	})
}
