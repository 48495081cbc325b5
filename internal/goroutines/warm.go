// Package goroutines runs short pieces of work on goroutines that ran such work before, when one
// is waiting, rather than on new ones. A call's judgement runs deep (the shell parser, the
// classifier), and a new goroutine's stack grows to that depth by copying itself several times
// on every call: about a twelfth of a system daemon's CPU per host call, by a profile of 1,000
// calls. It bounds nothing: work no waiting goroutine takes starts a new one, so the callers'
// own bounds still hold; and it keeps nothing idle for long.
package goroutines

import (
	"sync"
	"time"
)

// IdleFor is how long a goroutine that ran work waits for more before it ends.
const IdleFor = 10 * time.Second

// Warm hands work to goroutines that ran work before.
type Warm struct {
	done <-chan struct{}
	wg   *sync.WaitGroup
	next chan func() // unbuffered: a send succeeds only when a goroutine waits
}

// NewWarm returns a Warm whose goroutines end once done is closed (after the work they run),
// each counted in wg when it is not nil.
func NewWarm(done <-chan struct{}, wg *sync.WaitGroup) *Warm {
	return &Warm{done: done, wg: wg, next: make(chan func())}
}

// Go runs f on a waiting goroutine, or on a new one.
func (w *Warm) Go(f func()) {
	select {
	case w.next <- f:
	default:
		if w.wg != nil {
			w.wg.Go(func() { w.serve(f) })
		} else {
			go w.serve(f)
		}
	}
}

func (w *Warm) serve(f func()) {
	idle := time.NewTimer(IdleFor)
	defer idle.Stop()
	for {
		f()
		idle.Reset(IdleFor)
		select {
		case f = <-w.next:
		case <-idle.C:
			return
		case <-w.done:
			return
		}
	}
}
