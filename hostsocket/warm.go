package hostsocket

import (
	"context"
	"sync"
	"time"
)

// warmFor is how long a goroutine that served a connection waits for the next one before it
// ends.
const warmFor = 10 * time.Second

// warm serves connections on goroutines that have served one before, when one is waiting: a
// call's judgement runs deep (the shell parser, the classifier), and a new goroutine's stack
// grows to that depth by copying itself, several times, on every call (about a twelfth of a
// system daemon's CPU per call, by a profile of 1,000 calls). A connection no waiting goroutine
// takes starts a new one, so concurrency is bounded only by the server's per-user bounds, as
// before; a goroutine idle for warmFor ends, so an idle server keeps none.
type warm struct {
	ctx  context.Context
	wg   *sync.WaitGroup
	next chan func() // unbuffered: a send succeeds only when a goroutine waits
}

func newWarm(ctx context.Context, wg *sync.WaitGroup) *warm {
	return &warm{ctx: ctx, wg: wg, next: make(chan func())}
}

// run has f run on a waiting goroutine, or on a new one.
func (w *warm) run(f func()) {
	select {
	case w.next <- f:
	default:
		w.wg.Go(func() { w.serve(f) })
	}
}

func (w *warm) serve(f func()) {
	idle := time.NewTimer(warmFor)
	defer idle.Stop()
	for {
		f()
		idle.Reset(warmFor)
		select {
		case f = <-w.next:
		case <-idle.C:
			return
		case <-w.ctx.Done():
			return
		}
	}
}
