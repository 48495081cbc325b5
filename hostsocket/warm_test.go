package hostsocket

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

// A connection after another is served on the goroutine that served the first, which waited
// for it; one that comes while the others are busy is not held up behind them.
func TestAWaitingGoroutineServesTheNextConnectionAndABusyOneHoldsNoneUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		w := newWarm(t.Context(), &wg)
		ran := make(chan string, 3)
		w.run(func() { ran <- goroutine() })
		first := <-ran
		synctest.Wait() // it waits for the next
		w.run(func() { ran <- goroutine() })
		if second := <-ran; second != first {
			t.Errorf("the second connection ran on %q, not on %q that waited", second, first)
		}
		synctest.Wait()
		release := make(chan struct{})
		w.run(func() { <-release })
		synctest.Wait()
		w.run(func() { ran <- goroutine() })
		if other := <-ran; other == first {
			t.Error("a connection ran on the goroutine still busy with another")
		}
		close(release)
	})
}

// A goroutine idle for warmFor ends, and all of them when the server stops: an idle server
// keeps none.
func TestWaitingGoroutinesEndWhenIdleOrStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		w := newWarm(t.Context(), &wg)
		w.run(func() {})
		start := time.Now()
		wg.Wait()
		if idle := time.Since(start); idle != warmFor {
			t.Errorf("the goroutine ended after %v idle, want %v", idle, warmFor)
		}
		ctx, cancel := context.WithCancel(t.Context())
		w = newWarm(ctx, &wg)
		w.run(func() {})
		w.run(func() {})
		synctest.Wait()
		start = time.Now()
		cancel()
		wg.Wait()
		if waited := time.Since(start); waited != 0 {
			t.Errorf("stopping waited %v for the idle goroutines", waited)
		}
	})
}
