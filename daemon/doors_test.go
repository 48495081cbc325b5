package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
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
func TestAHostCallIsAnsweredOnlyAfterItsRecordIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := socketDaemon(t)
		answered := make(chan struct{})
		go func() {
			d.recordHostCall(context.Background(), telemetry.Record{RID: "r1"})
			close(answered)
		}()
		hr := <-d.hostRecs
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-answered:
			t.Fatal("answered before the record was written")
		default:
		}
		close(hr.done) // the writer wrote it
		synctest.Wait()
		select {
		case <-answered:
		default:
			t.Fatal("not answered once the record was written")
		}
	})
}

// A writer that does not get to the record in time does not hold the answer past recordWait.
func TestAHostCallWaitsForItsRecordAtMostRecordWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := socketDaemon(t)
		start := time.Now()
		d.recordHostCall(context.Background(), telemetry.Record{RID: "r1"})
		if waited := time.Since(start); waited != recordWait {
			t.Errorf("waited %v, want %v", waited, recordWait)
		}
	})
}
