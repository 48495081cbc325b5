package privsep

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestTheClockRanAheadOnlyWhenTheWallClockOutranTheTimer(t *testing.T) {
	const period = 15 * time.Second
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  bool
	}{
		{"a tick on time", period, false},
		{"a tick a few seconds late", period + 5*time.Second, false},
		{"a night's sleep", 8 * time.Hour, true},
		{"a clock set forward ten minutes", period + 10*time.Minute, true},
		{"a clock set back", period - time.Hour, false},
	} {
		if got := ranAhead(at, at.Add(tc.after), period); got != tc.want {
			t.Errorf("%s (%v after the last tick): ran ahead %v, want %v", tc.name, tc.after, got, tc.want)
		}
	}
}

// Root's beat compares the wall clock with its timers, and tells every worker when the clock ran
// ahead of them (a Mac that slept): the workers check their leases only at their rescans, so that
// an idle worker wakes once a rescan.
func TestRootTellsEveryWorkerWhenTheClockRanAheadOfItsBeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var skew atomic.Int64
		users := []User{{UID: 501, Name: "alex", Home: "/Users/alex"}, {UID: 502, Name: "sam", Home: "/Users/sam"}}
		s := &Supervisor{
			Users:  func() ([]User, error) { return users, nil },
			Rescan: 30 * time.Second,
			Now:    func() time.Time { return time.Now().Add(time.Duration(skew.Load())) },
			Log:    slog.New(slog.DiscardHandler),
		}
		told := make(chan uint32, 16)
		s.workers = map[uint32]*worker{}
		for _, u := range users {
			rootEnd, workerEnd := net.Pipe()
			s.workers[u.UID] = &worker{s: s, user: u, cancel: func() {}, ended: make(chan struct{}), l: newLink(rootEnd, 1<<16, 2)}
			wl := newLink(workerEnd, 1<<16, 2)
			go wl.run(context.Background(), func(_ context.Context, kind string, _ json.RawMessage) (any, error) {
				if kind == kindClock {
					told <- u.UID
				}
				return nil, nil
			})
			t.Cleanup(func() { rootEnd.Close(); workerEnd.Close() })
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}()
		count := func() int {
			synctest.Wait()
			n := 0
			for {
				select {
				case <-told:
					n++
				default:
					return n
				}
			}
		}

		time.Sleep(2 * time.Minute)
		if n := count(); n != 0 {
			t.Fatalf("%d clock notes over two minutes of a clock in step with the beat, want none", n)
		}
		skew.Add(int64(time.Hour)) // the Mac slept an hour
		time.Sleep(15 * time.Second)
		if n := count(); n != len(users) {
			t.Fatalf("%d clock notes at the beat after an hour's sleep, want one for each of %d workers", n, len(users))
		}
		time.Sleep(time.Minute)
		if n := count(); n != 0 {
			t.Errorf("%d clock notes after the beat that told of the sleep, want none", n)
		}
	})
}
