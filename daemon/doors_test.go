package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
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
		paths: managedconfig.Paths{StateDir: t.TempDir()}, hostRecs: make(chan telemetry.Record, 4)}
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
