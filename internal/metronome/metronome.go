// Package metronome gives a process's periodic work one beat: tickers made from one Metronome
// tick at whole multiples of their period since its start, so that tickers whose periods divide
// one another tick at the same instants and the process wakes once for all of them.
//
// It exists for what an idle process costs. With a hundred users' idle workers, each wake-up
// (the kernel's, the Go runtime's monitor thread and timers) cost more than the work it woke for,
// and a worker's rescans, lease checks and stats each woke it on their own. It does not pace or
// bound work, and it does not catch up: like a time.Ticker, a tick that finds the last one still
// waiting is dropped, and a process that was asleep or stalled ticks at the next beat, once.
package metronome

import (
	"math/rand/v2"
	"sync"
	"time"
)

// A Metronome is the beat its tickers share: its start. The zero value is not usable; a nil
// *Metronome makes tickers that each keep a beat of their own, as time.NewTicker does.
type Metronome struct {
	start time.Time // with its monotonic reading: wall-clock steps do not move the beat
}

// New returns a Metronome whose beat starts now.
func New() *Metronome { return &Metronome{start: time.Now()} }

// Spread returns a Metronome whose beat started at a random moment of the last minute. Processes
// started together (root starts every user's worker at once) would otherwise beat together: a
// hundred workers waking in the same instant on two cores each stay busy, and so keep the Go
// runtime's monitor thread polling, for as long as the whole herd takes (in the one run of it,
// a hundred idle users cost a third more than with no beat at all). A ticker's first tick may
// then come sooner than its period.
func Spread() *Metronome {
	return &Metronome{start: time.Now().Add(-rand.N(time.Minute))}
}

// next is how long from now to the next whole multiple of period since the start.
func (m *Metronome) next(period time.Duration) time.Duration {
	return period - time.Since(m.start)%period
}

// A Ticker delivers the beats of its period on C. Its methods are safe from any goroutine.
type Ticker struct {
	C <-chan time.Time

	c      chan time.Time
	m      *Metronome
	mu     sync.Mutex
	period time.Duration
	timer  *time.Timer
	gen    uint64 // which arming a firing timer belongs to; Stop and Reset start a new one
}

// Ticker returns a ticker that ticks at each whole multiple of period since m's start. The
// period must be positive.
func (m *Metronome) Ticker(period time.Duration) *Ticker {
	if period <= 0 {
		panic("metronome: non-positive period")
	}
	if m == nil {
		m = New()
	}
	c := make(chan time.Time, 1)
	t := &Ticker{C: c, c: c, m: m}
	t.Reset(period)
	return t
}

// Reset stops the ticker and starts it again on period, from the next beat of that period.
func (t *Ticker) Reset(period time.Duration) {
	if period <= 0 {
		panic("metronome: non-positive period")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
	t.period = period
	gen := t.gen
	t.timer = time.AfterFunc(t.m.next(period), func() { t.tick(gen) })
}

// Stop stops the ticker: C holds no tick after it returns, as with time.Ticker since Go 1.23.
// It does not close C.
func (t *Ticker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
}

func (t *Ticker) stopLocked() {
	t.gen++
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	select {
	case <-t.c:
	default:
	}
}

func (t *Ticker) tick(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return // stopped or reset after this timer fired
	}
	select {
	case t.c <- time.Now():
	default: // the last tick is still waiting: this one is dropped, as time.Ticker does
	}
	t.timer.Reset(t.m.next(t.period))
}
