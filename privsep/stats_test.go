package privsep

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"testing/synctest"
)

// The heartbeat counts what the workers watch as each last told root, asking none of them: a
// heartbeat, and every health snapshot, that asked woke every idle worker. Status still asks.
func TestTheToldFiguresAskNoWorkerAndTheStatsAskEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Supervisor{workers: map[uint32]*worker{}}
		asked := make(chan string, 16)
		for uid, told := range map[uint32]Stats{501: {Watches: 12, Sessions: 3}, 502: {Watches: 4, Sessions: 1}} {
			rootEnd, workerEnd := net.Pipe()
			rl := newLink(rootEnd, 1<<16, 2)
			go rl.run(context.Background(), func(context.Context, string, json.RawMessage) (any, error) { return nil, nil })
			s.workers[uid] = &worker{s: s, user: User{UID: uid}, l: rl, stats: told}
			wl := newLink(workerEnd, 1<<16, 2)
			go wl.run(context.Background(), func(_ context.Context, kind string, _ json.RawMessage) (any, error) {
				asked <- kind
				return Stats{Watches: 100, Sessions: 10}, nil
			})
			t.Cleanup(func() { rootEnd.Close(); workerEnd.Close() })
		}
		if got := s.Told(); got != (Stats{Watches: 16, Sessions: 4}) {
			t.Errorf("Told %+v, want the figures the workers told (16 watches, 4 sessions)", got)
		}
		synctest.Wait()
		if len(asked) != 0 {
			t.Fatalf("Told asked %d workers", len(asked))
		}
		if got := s.Stats(); got != (Stats{Watches: 200, Sessions: 20}) {
			t.Errorf("Stats %+v, want each worker's figures as of now", got)
		}
		if len(asked) != 2 {
			t.Errorf("Stats asked %d workers, want 2", len(asked))
		}
	})
}
