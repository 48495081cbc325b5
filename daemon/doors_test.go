package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/hostsocket"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/judgement/judgementtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// socketDaemon is a system daemon's socket side alone, serving in enforce, its records queued.
func socketDaemon(t *testing.T) (*Daemon, *serving) {
	t.Helper()
	d := &Daemon{log: slog.New(slog.DiscardHandler), health: health.New(time.Now), env: managedconfig.Env{GOOS: "linux"},
		paths: managedconfig.Paths{StateDir: t.TempDir()}, hostRecs: make(chan telemetry.Record, 4)}
	sv := &serving{on: true, snap: managedconfig.Snapshot{Config: managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce}}}
	d.serving.Store(sv)
	return d, sv
}

const lsCall = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_ls"}`

func TestAFailingEngineAtTheSocketIsADenyAndARecord(t *testing.T) {
	for _, e := range []struct {
		name  string
		rules judgement.Rules
	}{{"panics", judgementtest.Panicking{}}, {"hangs", judgementtest.Hanging{}}} {
		t.Run(e.name, func(t *testing.T) {
			d, sv := socketDaemon(t)
			cfg := sv.snap.Config
			h := &hostCalls{d: d, users: map[uint32]*userPolicy{7: {hash: sv.snap.ShortHash(), name: "ada", home: "/home/ada", cfg: cfg,
				judge: judgement.Judge{Cfg: cfg, Rules: e.rules, Budget: 20 * time.Millisecond}}}}
			a := h.Serve(context.Background(), hostsocket.Peer{UID: 7}, hostsocket.Request{Kind: hostsocket.KindCall, Payload: json.RawMessage(lsCall)})
			if got, err := claudehook.ParseOutput(a.Output); err != nil || got.Decision != claudehook.Deny || a.Error != "" {
				t.Fatalf("answer %+v (%v), want a deny", a, err)
			}
			select {
			case rec := <-d.hostRecs:
				if rec.Rule != ruleid.ClassifierError || rec.Decision != claudehook.Deny || !rec.Enforced || rec.User != "ada" ||
					rec.Transport != telemetry.TransportSocket || rec.ToolUseID != "toolu_ls" {
					t.Errorf("record %+v", rec)
				}
			default:
				t.Fatal("no record queued")
			}
		})
	}
}

// A failure serving one user's call, outside the judgement too, is an error answer (the hook then
// judges alone and, in enforce, denies); the daemon that serves every user goes on.
func TestAPanicServingAHostCallIsAnErrorAnswerNotTheDaemonsEnd(t *testing.T) {
	d, _ := socketDaemon(t)
	h := &hostCalls{d: d} // no policy cache: storing the caller's policy panics
	a := h.Serve(context.Background(), hostsocket.Peer{UID: uint32(os.Getuid())}, hostsocket.Request{Kind: hostsocket.KindCall, Payload: json.RawMessage(lsCall)})
	if !strings.Contains(a.Error, "the daemon failed on this call") || len(a.Output) != 0 {
		t.Fatalf("answer %+v, want an error", a)
	}
	if n := d.health.Snapshot(false).Totals.Counts[health.CodeHostCallFailed]; n != 1 {
		t.Errorf("host_call_failed counted %d times", n)
	}
}
