package privsep

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// benchCall is a VM-loop call as a lane hands it to its judgement.
func benchCall() judgement.Call {
	return judgement.Call{Door: judgement.Spool, RID: "0123456789abcdef0123456789abcdef", Session: "local_b", Own: "/Users/ada/s/local_b", Waiting: true,
		Payload: claudehook.Payload{SessionID: "s", ToolName: "Bash", ToolUseID: "toolu_1", Cwd: "/sessions/b/mnt/outputs",
			ToolInput: json.RawMessage(`{"command":"git status && ls -la src/","description":"look"}`)}}
}

func benchJudge(b *testing.B) judgement.Judge {
	cls, err := policy.Compile(managedconfig.Policy{})
	if err != nil {
		b.Fatal(err)
	}
	return judgement.Judge{Cfg: managedconfig.Config{CoworkEnabled: true, Mode: managedconfig.Enforce}, Rules: cls}
}

// BenchmarkDecideInProcess is the judgement as a daemon without workers makes it.
func BenchmarkDecideInProcess(b *testing.B) {
	j, c := benchJudge(b), benchCall()
	for b.Loop() {
		j.Decide(context.Background(), c)
	}
}

// BenchmarkDecideThroughTheLink is the same judgement asked by a worker of root over their
// socket pair, links followed on the worker's side, and its record sent back to be written:
// the privilege separation's cost per VM-loop call.
func BenchmarkDecideThroughTheLink(b *testing.B) {
	r := &judgingRoot{judge: benchJudge(b)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rules, lw := overTheLink(ctx, b, r)
	sink := remoteSink{link: lw, max: 1 << 20}
	c := benchCall()
	for b.Loop() {
		o := rules.Decide(ctx, c)
		if err := sink.WriteBatch([]telemetry.Record{o.Record}); err != nil {
			b.Fatal(err)
		}
		r.mu.Lock()
		r.recs = r.recs[:0]
		r.mu.Unlock()
	}
}

// overTheLink is a worker's judgement asked of root r over a socket pair, as in system mode; the
// link runs until ctx ends.
func overTheLink(ctx context.Context, tb testing.TB, r *judgingRoot) (*remoteRules, *link) {
	a, w := pair(tb)
	root := &worker{s: &Supervisor{Root: r}, user: User{Name: "ada"}}
	lr, lw := newLink(a, 64<<20, 8), newLink(w, 64<<20, 4)
	go lr.run(ctx, root.handle)
	go lw.run(ctx, func(context.Context, string, json.RawMessage) (any, error) { return nil, nil })
	rules := &remoteRules{link: lw, now: time.Now}
	rules.set(Setup{})
	return rules, lw
}
