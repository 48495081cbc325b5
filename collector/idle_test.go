package collector

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/lane"
	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// addCounter is a fake watcher that counts the watches added on each folder.
type addCounter struct {
	*fswatch.Fake
	mu   sync.Mutex
	adds map[string]int
}

func (a *addCounter) Add(dir string) error {
	a.mu.Lock()
	a.adds[dir]++
	a.mu.Unlock()
	return a.Fake.Add(dir)
}

func (a *addCounter) count(dir string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.adds[dir]
}

// A rescan of an idle session does not walk and watch its folders again while they are the ones
// watched, unchanged; a folder replaced since is watched again at the next rescan.
func TestARescanWatchesAgainOnlyAFolderThatChanged(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	w := &addCounter{Fake: fswatch.NewFake(), adds: map[string]int{}}
	f.opts.Watcher = func() (fswatch.Watcher, error) { return w, nil }
	f.start()
	f.settle()
	f.settle()
	decisions := f.bridge("decisions")
	claude := filepath.Join(f.dir, ".claude")
	before, beforeClaude := w.count(decisions), w.count(claude)
	if before == 0 || beforeClaude == 0 {
		t.Fatalf("the session's folders were never watched (%d, %d adds)", before, beforeClaude)
	}
	f.settle()
	f.settle()
	if n := w.count(decisions); n != before {
		t.Errorf("decisions/ unchanged was watched again at a rescan (%d adds, then %d)", before, n)
	}
	if n := w.count(claude); n != beforeClaude {
		t.Errorf(".claude unchanged was watched again at a rescan (%d adds, then %d)", beforeClaude, n)
	}
	if err := os.Rename(decisions, decisions+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(decisions, 0o700); err != nil {
		t.Fatal(err)
	}
	f.settle()
	if n := w.count(decisions); n <= before {
		t.Errorf("a replaced decisions/ was not watched again (%d adds)", n)
	}
}

// A session that does nothing, with every folder of ours watched, is housekept (its lease
// renewed, its folders swept and its instruction files looked at) at the end of each rest, the
// rests doubling up to cadence.MaxRest rescans, its lease outlasting the next; anything that asks
// for a pass of it brings it back to every rescan, and to the first rest.
func TestACalmSessionRestsLongerEachTimeAndAStirredOneIsHousekeptAtTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _, lease := onFake(t)
		last := lease()
		rest := func(n int) {
			t.Helper()
			for i := 1; i < n; i++ {
				f.rescans(1)
				if got := lease(); got != last {
					t.Fatalf("rescan %d of a rest of %d renewed a calm session's lease (%v, then %v)", i, n, last, got)
				}
			}
			f.rescans(1)
			renewed := lease()
			if renewed == last {
				t.Fatalf("rescan %d did not housekeep the calm session at the end of its rest (lease %v)", n, renewed)
			}
			next := min(2*n, cadence.MaxRest)
			if left := time.Until(renewed); left < time.Duration(next)*f.cfg.RescanInterval {
				t.Errorf("the lease runs %v past its renewal, less than the %d rescans the next rest may take", left, next)
			}
			last = renewed
		}
		for n := cadence.FirstRest; n < cadence.MaxRest; n *= 2 {
			rest(n)
		}
		rest(cadence.MaxRest)
		rest(cadence.MaxRest)

		rid := f.nextRID()
		f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
		f.waitRecords(1)
		if err := os.Remove(filepath.Join(f.bridge("decisions"), rid+".json")); err != nil {
			t.Fatal(err) // as the hook does, having read it
		}
		f.rescans(1)
		if got := lease(); got == last {
			t.Errorf("the rescan after a call did not housekeep the session (lease %v)", got)
		}
		// Its decision swept, the session is calm again, and rests from the first rest.
		for i := 0; i < 10 && !f.calm(); i++ {
			f.rescans(1)
		}
		last = lease()
		rest(cadence.FirstRest)
	})
}

// A session the watcher does not cover whole is housekept at every rescan: the rescan is all
// that sees what changes in the folder left out.
func TestASessionNotWatchedWholeIsHousekeptAtEveryRescan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, managedconfig.Enforce)
		f.cfg.RescanInterval = 30 * time.Second
		w := f.useFake()
		decisions := f.bridge("decisions")
		w.Refuse = func(dir string) bool { return dir == decisions }
		f.start()
		lease := leaseReader(t, f)
		last := lease()
		for i := 1; i <= 2; i++ {
			f.rescans(1)
			got := lease()
			if !got.After(last) {
				t.Fatalf("rescan %d did not housekeep a session whose decisions/ is not watched (lease %v)", i, got)
			}
			last = got
		}
	})
}

// A lease that would run out within a rescan is renewed at once, whatever the session's calm:
// after a Mac's sleep the clock has run on while the timers stood still.
func TestALeaseDueAfterTheClockJumpedIsRenewedBeforeTheRescan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _, lease := onFake(t)
		first := lease()
		f.later(time.Until(first) - f.cfg.RescanInterval + time.Second) // slept: the clock ran on, the timers did not
		time.Sleep(f.c.leaseCheckEvery() + time.Millisecond)
		synctest.Wait()
		if got := lease(); !got.After(first) {
			t.Errorf("a lease due within a rescan was not renewed at the lease check (%v)", got)
		}
	})
}

// A collector told of clock jumps (a system-mode worker, told by root) wakes for no lease check
// of its own between rescans: told, it renews at once the leases the clock brought due, and a
// jump it was not told of is still caught at the next rescan.
func TestACollectorToldOfClockJumpsRenewsWhenToldAndAtTheRescan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, managedconfig.Enforce)
		f.cfg.RescanInterval = 30 * time.Second
		f.useFake()
		f.opts.ClockTold = true
		f.start()
		lease := leaseReader(t, f)
		first := lease()
		f.later(time.Until(first) - f.cfg.RescanInterval + time.Second) // slept
		time.Sleep(f.c.leaseCheckEvery() + time.Millisecond)
		synctest.Wait()
		if got := lease(); got != first {
			t.Fatalf("a collector told of clock jumps checked its leases between rescans (%v, then %v)", first, got)
		}
		f.c.RenewDue()
		synctest.Wait()
		told := lease()
		if !told.After(first) {
			t.Fatalf("a lease due within a rescan was not renewed when the collector was told (%v)", told)
		}

		f.later(told.Sub(f.c.opts.Now()) - f.cfg.RescanInterval/2) // slept again, untold
		time.Sleep(f.cfg.RescanInterval - f.c.leaseCheckEvery())
		synctest.Wait()
		if got := lease(); !got.After(told) {
			t.Errorf("a lease the clock brought due was not renewed at the next rescan (%v)", got)
		}
	})
}

// calmFixture is a session started on a fake watcher in a synctest bubble, with rescans every 30 s,
// after one rescan: calm. lease reads the time its lease runs to, as the rescan left it.
func calmFixture(t *testing.T) (f *fixture, w *fswatch.Fake, lease func() time.Time, first time.Time) {
	t.Helper()
	f, w, lease = onFake(t)
	f.rescans(1)
	return f, w, lease, lease()
}

// onFake is a session started on a fake watcher in a synctest bubble, with rescans every 30 s;
// lease reads the time its lease runs to.
func onFake(t *testing.T) (f *fixture, w *fswatch.Fake, lease func() time.Time) {
	t.Helper()
	f = newFixture(t, managedconfig.Enforce)
	f.cfg.RescanInterval = 30 * time.Second
	w = f.useFake()
	f.start()
	return f, w, leaseReader(t, f)
}

// rescans lets n rescans' time pass in a synctest bubble, and waits for what they started.
func (f *fixture) rescans(n int) {
	time.Sleep(time.Duration(n) * f.cfg.RescanInterval)
	synctest.Wait()
}

// judgedAtSocket hands the collector the receipt of a call of the fixture's session judged at
// the system socket.
func (f *fixture) judgedAtSocket(t *testing.T) {
	t.Helper()
	hl, ok := f.c.HostCall("local_a")
	if !ok {
		t.Fatal("the session is not tracked")
	}
	hl.Judged(claudehook.Receipt{V: 1, ToolUseID: "toolu_01", Tool: "Bash"})
}

// calm reports whether the fixture's session is calm.
func (f *fixture) calm() bool {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	e := f.c.sessions[f.dir]
	return e != nil && e.cadence.Calm()
}

// leaseReader reads the time the session's lease runs to.
func leaseReader(t *testing.T, f *fixture) func() time.Time {
	return func() time.Time {
		t.Helper()
		data, err := os.ReadFile(f.bridge("alive"))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			t.Fatalf("lease %q: %v", data, err)
		}
		return time.Unix(n, 0)
	}
}

// The watcher may report the lane's own renewal of the lease while the pass that wrote it still
// runs, before the lane has noted the lease's stamp: the change is looked at once the pass is
// done, and leaves a calm session calm; a lease planted meanwhile is still caught.
func TestALeaseChangeSeenDuringAPassIsJudgedWhenThePassEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, w, _, _ := calmFixture(t)
		f.c.mu.Lock()
		e := f.c.sessions[f.dir]
		f.c.mu.Unlock()
		calm := f.calm
		alive := f.bridge("alive")
		during := func(change func()) (gone, lease bool) {
			f.c.mu.Lock()
			e.running = true
			f.c.mu.Unlock()
			change()
			synctest.Wait()
			if n := len(f.c.queue); n != 0 {
				t.Fatalf("a lease change during a pass queued %d passes before the pass ended", n)
			}
			return f.c.passDone(e, false, lane.Result{})
		}
		if _, lease := during(func() { w.Change(alive, fswatch.Write) }); !lease {
			t.Fatal("the lease change seen during the pass was not kept for its end")
		}
		f.c.leaseChanged(e)
		synctest.Wait()
		if !calm() {
			t.Error("the lane's own renewal, seen during its pass, stirred the session")
		}

		_, lease := during(func() {
			os.WriteFile(alive+".plant", []byte("99999999999\n"), 0o600)
			os.Rename(alive+".plant", alive)
			w.Change(alive, fswatch.Create)
		})
		f.c.leaseChanged(e)
		synctest.Wait()
		if !lease || f.health.count("quarantined") != 1 {
			t.Errorf("a lease planted during a pass was not caught when it ended (kept %v, %d quarantines)", lease, f.health.count("quarantined"))
		}
	})
}

// Whatever tells of use or of change in a calm session brings its housekeeping back to the next
// rescan: lost events (no session is calm after them), a change the injector's watches saw where
// the collector watches nothing (a CLAUDE.md a sync drops in outputs/), and a call judged at the
// system socket (the next pass takes its receipt).
func TestAStirredCalmSessionIsHousekeptAtTheNextRescan(t *testing.T) {
	for _, tc := range []struct {
		name string
		stir func(t *testing.T, f *fixture, w *fswatch.Fake)
	}{
		{"the watcher lost events", func(t *testing.T, f *fixture, w *fswatch.Fake) {
			w.Fail(errors.New("queue overflow"))
		}},
		{"the injector saw a change", func(t *testing.T, f *fixture, w *fswatch.Fake) { f.c.Stir("local_a") }},
		{"a call judged at the socket", func(t *testing.T, f *fixture, w *fswatch.Fake) { f.judgedAtSocket(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, w, lease, first := calmFixture(t)
				tc.stir(t, f, w)
				synctest.Wait()
				f.rescans(1)
				if got := lease(); !got.After(first) {
					t.Errorf("the rescan after it did not housekeep the session (lease %v)", got)
				}
			})
		})
	}
}

// A calm session something happens in (a call in its spool, a call judged at the socket) is
// told to Options.Woke once, by its folder: the injector's rest of it ends too. A session
// stirred since its last housekeeping began is not told again.
func TestACalmSessionStirredWakesTheInjectorOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		stir func(t *testing.T, f *fixture)
	}{
		{"a call in its spool", func(t *testing.T, f *fixture) {
			f.appendRaw(envelope(f.nextRID(), "enforce", "Bash", bash("ls")) + "\n")
			f.waitRecords(1)
		}},
		{"a call judged at the socket", func(t *testing.T, f *fixture) { f.judgedAtSocket(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var woke []string
				f := newFixture(t, managedconfig.Enforce)
				f.cfg.RescanInterval = 30 * time.Second
				f.opts.Woke = func(dir string) {
					mu.Lock()
					woke = append(woke, dir)
					mu.Unlock()
				}
				f.useFake()
				f.start()
				f.rescans(1)
				if !f.calm() {
					t.Fatal("setup: the session is not calm")
				}
				mu.Lock()
				woke = nil // what its start stirred
				mu.Unlock()
				tc.stir(t, f)
				f.c.Stir("local_a") // stirred already: not told again
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(woke) != 1 || woke[0] != f.dir {
					t.Errorf("Woke was told %q, want the session's folder once", woke)
				}
			})
		})
	}
}

// A quarantine the injector asks for while a housekeeping pass of the session runs leaves it
// stirred: the pass may have found it quiet before the quarantine came.
func TestAQuarantineDuringAHousekeepingPassLeavesTheSessionStirred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, _, _, _ := calmFixture(t)
		f.c.mu.Lock()
		e := f.c.sessions[f.dir]
		e.running = true
		f.c.mu.Unlock()
		f.c.Quarantine("local_a", "disableAllHooks was set")
		f.c.passDone(e, true, lane.Result{Quiet: true})
		f.c.mu.Lock()
		calm := e.cadence.Calm()
		f.c.mu.Unlock()
		if calm {
			t.Error("a session quarantined during its pass was left calm")
		}
	})
}
