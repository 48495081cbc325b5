package goroutines

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// goroutine names the goroutine that calls it, by the first line of its stack.
func goroutine() string {
	buf := make([]byte, 64)
	line, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), "[")
	return line
}

// Work after other work runs on the goroutine that ran it, which waited for it; work that comes
// while the others are busy is not held up behind them.
func TestAWaitingGoroutineRunsTheNextWorkAndABusyOneHoldsNoneUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		w := NewWarm(t.Context().Done(), &wg)
		ran := make(chan string, 3)
		w.Go(func() { ran <- goroutine() })
		first := <-ran
		synctest.Wait() // it waits for the next
		w.Go(func() { ran <- goroutine() })
		if second := <-ran; second != first {
			t.Errorf("the second work ran on %q, not on %q that waited", second, first)
		}
		synctest.Wait()
		release := make(chan struct{})
		w.Go(func() { <-release })
		synctest.Wait()
		w.Go(func() { ran <- goroutine() })
		if other := <-ran; other == first {
			t.Error("work ran on the goroutine still busy with other work")
		}
		close(release)
	})
}

// A goroutine idle for IdleFor ends, and all of them when done is closed: nothing idle is kept
// for long.
func TestWaitingGoroutinesEndWhenIdleOrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		w := NewWarm(t.Context().Done(), &wg)
		w.Go(func() {})
		start := time.Now()
		wg.Wait()
		if idle := time.Since(start); idle != IdleFor {
			t.Errorf("the goroutine ended after %v idle, want %v", idle, IdleFor)
		}
		ctx, cancel := context.WithCancel(t.Context())
		w = NewWarm(ctx.Done(), &wg)
		w.Go(func() {})
		w.Go(func() {})
		synctest.Wait()
		start = time.Now()
		cancel()
		wg.Wait()
		if waited := time.Since(start); waited != 0 {
			t.Errorf("closing done waited %v for the idle goroutines", waited)
		}
	})
}
