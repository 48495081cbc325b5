package privsep

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/health"
)

// A worker's health notes reach root within healthEvery of the first, a full batch at once, what
// is left as the queue stops, and nothing while there is nothing to send. (That an idle queue
// also wakes no one is measured, not tested: roundtrip-bench -idle -users, the workers' CPU.)
func TestHealthNotesGoWithinTheirWaitOrAtOnceWhenABatchIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, batches, stop := runQueue(t)
		got := func() (n, last int) {
			b := batches()
			if len(b) > 0 {
				last = len(b[len(b)-1])
			}
			return len(b), last
		}

		time.Sleep(time.Hour) // idle: nothing is sent, and no timer wakes the queue
		synctest.Wait()
		if n, _ := got(); n != 0 {
			t.Fatalf("an idle queue delivered %d batches", n)
		}
		q.send(HealthNote{Op: "count"})
		q.send(HealthNote{Op: "count"})
		time.Sleep(healthEvery - time.Millisecond)
		synctest.Wait()
		if n, _ := got(); n != 0 {
			t.Fatalf("notes were sent before their wait was out (%d batches)", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n, last := got(); n != 1 || last != 2 {
			t.Fatalf("%d batches, the last of %d notes; want one of 2 once the wait is out", n, last)
		}
		for range healthBatch {
			q.send(HealthNote{Op: "event"})
		}
		synctest.Wait()
		if n, last := got(); n != 2 || last != healthBatch {
			t.Fatalf("%d batches, the last of %d notes; want a full batch sent at once", n, last)
		}
		q.send(HealthNote{Op: "count"})
		stop()
		if n, last := got(); n != 3 || last != 1 {
			t.Fatalf("%d batches, the last of %d notes; want what was left sent as the queue stops", n, last)
		}
	})
}

// The note that ends a rescan goes at once, taking every note before it along in order: its
// wait would wake an idle worker a second time for each pass.
func TestANoteSentNowTakesTheWaitingNotesAlongAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, batches, stop := runQueue(t)
		defer stop()

		q.send(HealthNote{Op: "session_seen", ID: "a"})
		q.send(HealthNote{Op: "session_hooked", ID: "a"})
		q.sendNow(HealthNote{Op: "scanned"})
		synctest.Wait()
		if b := batches(); len(b) != 1 || len(b[0]) != 3 || b[0][0].Op != "session_seen" || b[0][2].Op != "scanned" {
			t.Errorf("batches %v; want the three notes in one batch, in order, at once", b)
		}
		time.Sleep(time.Hour)
		q.send(HealthNote{Op: "count"})
		time.Sleep(healthEvery)
		synctest.Wait()
		if b := batches(); len(b) != 2 || len(b[1]) != 1 {
			t.Errorf("after the urgent batch, %d batches; want the next note to wait its turn alone", len(b))
		}
	})
}

// runQueue runs a health queue whose batches are kept, until stop (which waits for it to end).
func runQueue(t *testing.T) (q *healthQueue, batches func() [][]HealthNote, stop func()) {
	var mu sync.Mutex
	var sent [][]HealthNote
	q = newHealthQueueTo(func(b []HealthNote) {
		mu.Lock()
		sent = append(sent, b)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { q.run(ctx); close(done) }()
	var once sync.Once
	return q, func() [][]HealthNote {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(sent)
		}, func() {
			once.Do(func() { cancel(); <-done })
		}
}

// A rescan that found what the last one sent is not reported: root's health ignores it, and a
// hundred idle workers' reports woke root several times a second. A report that differs, or one
// that ends a pass with notes waiting, goes at once.
func TestARescanReportTheSameAsTheLastIsNotSentAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, batches, stop := runQueue(t)
		defer stop()
		ops := func() (out []string) {
			synctest.Wait()
			for _, b := range batches() {
				for _, n := range b {
					out = append(out, n.Op)
				}
			}
			return out
		}
		calm := health.ScanReport{Roots: []string{"/Users/alex/sessions"}, Sessions: 3, Live: 3, Watches: 12}
		q.scanned(calm)
		ops()
		q.scanned(calm)
		if got := ops(); !slices.Equal(got, []string{"scanned"}) {
			t.Fatalf("two rescans that found the same sent %v; want one report", got)
		}
		grown := calm
		grown.Sessions, grown.Live = 4, 4
		q.scanned(grown)
		if got := ops(); len(got) != 2 {
			t.Fatalf("a rescan that found another session sent %v; want its report too", got)
		}
		q.send(HealthNote{Op: "session_hooked", ID: "a"})
		q.scanned(grown)
		if got := ops(); !slices.Equal(got, []string{"scanned", "scanned", "session_hooked", "scanned"}) {
			t.Errorf("a rescan with a note waiting sent %v; want the note and the report at once", got)
		}
	})
}
