package metronome

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// ticks reads C until the bubble's clock passes until, returning when each tick came, as
// offsets from start.
func ticks(t *testing.T, c <-chan time.Time, start time.Time, until time.Duration) []time.Duration {
	t.Helper()
	var got []time.Duration
	deadline := time.After(until - time.Since(start))
	for {
		select {
		case <-c:
			got = append(got, time.Since(start))
		case <-deadline:
			return got
		}
	}
}

// both reads two tickers until the bubble's clock passes until, returning when each ticked, as
// offsets from start.
func both(a, b *Ticker, start time.Time, until time.Duration) (aAt, bAt []time.Duration) {
	deadline := time.After(until - time.Since(start))
	for {
		select {
		case <-a.C:
			aAt = append(aAt, time.Since(start))
		case <-b.C:
			bAt = append(bAt, time.Since(start))
		case <-deadline:
			return aAt, bAt
		}
	}
}

func TestTickersOfDividingPeriodsTickAtTheSameInstants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		m := New()
		time.Sleep(4 * time.Second) // made later than the metronome, as a collector is
		fast := m.Ticker(15 * time.Second)
		defer fast.Stop()
		time.Sleep(9 * time.Second)
		slow := m.Ticker(30 * time.Second)
		defer slow.Stop()

		fastAt, slowAt := both(fast, slow, start, 95*time.Second)
		wantFast := []time.Duration{15 * time.Second, 30 * time.Second, 45 * time.Second, 60 * time.Second, 75 * time.Second, 90 * time.Second}
		wantSlow := []time.Duration{30 * time.Second, 60 * time.Second, 90 * time.Second}
		if !slices.Equal(fastAt, wantFast) || !slices.Equal(slowAt, wantSlow) {
			t.Errorf("15 s ticker at %v, 30 s at %v; want %v and %v", fastAt, slowAt, wantFast, wantSlow)
		}
	})
}

func TestNilMetronomeTicksFromTheTickersOwnStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		time.Sleep(3 * time.Second)
		var m *Metronome
		tk := m.Ticker(10 * time.Second)
		defer tk.Stop()
		got := ticks(t, tk.C, start, 35*time.Second)
		want := []time.Duration{13 * time.Second, 23 * time.Second, 33 * time.Second}
		if !slices.Equal(got, want) {
			t.Errorf("ticks at %v, want %v", got, want)
		}
	})
}

func TestASlowReaderFindsOneTickNotABacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		tk := New().Ticker(10 * time.Second)
		defer tk.Stop()
		time.Sleep(45 * time.Second) // four beats pass unread
		select {
		case at := <-tk.C:
			if d := at.Sub(start); d != 10*time.Second {
				t.Errorf("the waiting tick is from %v, want the first beat's (10s)", d)
			}
		default:
			t.Fatal("no tick waiting after four beats")
		}
		got := ticks(t, tk.C, start, 55*time.Second)
		if want := []time.Duration{50 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("then ticks at %v, want %v: the beat, not the missed ones", got, want)
		}
	})
}

func TestStopLeavesNothingToReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := New().Ticker(time.Second)
		time.Sleep(1500 * time.Millisecond) // one tick waiting
		tk.Stop()
		time.Sleep(5 * time.Second)
		select {
		case <-tk.C:
			t.Error("a tick was received after Stop")
		default:
		}
	})
}

func TestResetMovesToTheNewPeriodsBeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		m := New()
		tk := m.Ticker(10 * time.Second)
		defer tk.Stop()
		time.Sleep(12 * time.Second)
		<-tk.C
		tk.Reset(25 * time.Second)
		got := ticks(t, tk.C, start, 80*time.Second)
		want := []time.Duration{25 * time.Second, 50 * time.Second, 75 * time.Second}
		if !slices.Equal(got, want) {
			t.Errorf("after Reset ticks at %v, want %v", got, want)
		}
	})
}

func TestNonPositivePeriodPanics(t *testing.T) {
	for _, p := range []time.Duration{0, -time.Second} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Ticker(%v) did not panic", p)
				}
			}()
			New().Ticker(p)
		}()
	}
}

// A spread metronome's tickers still tick together, each at its own period, and never later
// than a period after they were made; what is spread is where the beat falls.
func TestASpreadMetronomesTickersTickTogetherWithinAPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := Spread()
		start := time.Now()
		fast, slow := m.Ticker(15*time.Second), m.Ticker(30*time.Second)
		defer fast.Stop()
		defer slow.Stop()
		fastAt, slowAt := both(fast, slow, start, 60*time.Second)
		if len(fastAt) != 4 || len(slowAt) != 2 || fastAt[0] > 15*time.Second || slowAt[0] > 30*time.Second {
			t.Fatalf("15 s ticker at %v, 30 s at %v; want 4 and 2 ticks, the first within a period", fastAt, slowAt)
		}
		for _, s := range slowAt {
			if !slices.Contains(fastAt, s) {
				t.Errorf("the 30 s ticker ticked at %v, when the 15 s one did not (%v)", s, fastAt)
			}
		}
	})
}
