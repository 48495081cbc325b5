package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

// clock is a hand-set time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestHealth() (*Health, *clock) {
	c := &clock{t: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)}
	h := New(c.now)
	h.SetConfig(ConfigState{Origin: "file", Mode: "enforce", Enabled: true, Hash: "abc"})
	return h, c
}

func warningCodes(s Snapshot) []Code {
	var out []Code
	for _, w := range s.Warnings {
		out = append(out, w.Code)
	}
	return out
}

func warning(s Snapshot, code Code) *Warning {
	for i := range s.Warnings {
		if s.Warnings[i].Code == code {
			return &s.Warnings[i]
		}
	}
	return nil
}

// Each row raises one warning, checks it names the sessions concerned, then removes the cause
// and checks that the warning clears.
func TestEachWarningRaisesAndClears(t *testing.T) {
	tests := []struct {
		code     Code
		raise    func(h *Health, c *clock)
		clear    func(h *Health, c *clock)
		sessions []string
	}{
		{CodeSessionUnhooked,
			func(h *Health, c *clock) {
				h.SessionSeen("local_a", "/s/a")
				h.SessionUnhooked("local_a", errors.New("settings.json is a directory"))
			},
			func(h *Health, c *clock) { h.SessionHooked("local_a", false) },
			[]string{"local_a"}},
		{CodeSessionUnverified,
			func(h *Health, c *clock) { h.SessionSeen("local_a", "/s/a"); h.SessionHooked("local_a", true) },
			func(h *Health, c *clock) { h.Event("local_a", Allow, 0) },
			[]string{"local_a"}},
		{CodeHookedButSilent,
			func(h *Health, c *clock) {
				h.SessionSeen("local_a", "/s/a")
				h.SessionHooked("local_a", false)
				h.SessionSeen("local_b", "/s/b")
				h.SessionHooked("local_b", false)
				c.add(16 * time.Minute)
			},
			func(h *Health, c *clock) { h.Event("local_b", Allow, 0) },
			[]string{"local_a", "local_b"}},
		{CodeLayoutUnrecognised,
			func(h *Health, c *clock) {
				h.Scanned(ScanReport{Roots: []string{"/r"}, Unrecognised: []string{"/r/x/local_y"}})
			},
			func(h *Health, c *clock) { h.Scanned(ScanReport{Roots: []string{"/r"}}) },
			[]string{"/r/x/local_y"}},
		{CodeNoSessionsRoot,
			func(h *Health, c *clock) { h.Scanned(ScanReport{Roots: []string{"/r"}, MissingRoots: []string{"/r"}}) },
			func(h *Health, c *clock) { h.Scanned(ScanReport{Roots: []string{"/r"}}) },
			nil},
		{CodeWatchLimit,
			func(h *Health, c *clock) { h.Scanned(ScanReport{Roots: []string{"/r"}, WatchLimited: 3}) },
			func(h *Health, c *clock) { h.Scanned(ScanReport{Roots: []string{"/r"}}) },
			nil},
		{CodeDecisionsUnconsumed,
			func(h *Health, c *clock) { h.CountN("local_a", CodeDecisionsUnconsumed, 2) },
			func(h *Health, c *clock) { h.Snapshot(true) }, // a quiet heartbeat window
			[]string{"local_a"}},
		{CodeTranscriptTampered,
			func(h *Health, c *clock) { h.Count("local_a", CodeTranscriptTampered) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_a"}},
		{CodeForgedEvent,
			func(h *Health, c *clock) { h.Count("local_b", CodeForgedEvent); h.Count("local_b", CodeForgedEvent) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_b"}},
		{CodeUnconfirmedEvent,
			func(h *Health, c *clock) { h.Count("local_b", CodeUnconfirmedEvent) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_b"}},
		{CodeSessionOverBudget,
			func(h *Health, c *clock) { h.Count("local_a", CodeSessionOverBudget) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_a"}},
		{CodeMalformedLines,
			func(h *Health, c *clock) { h.Count("local_a", CodeMalformedLines) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_a"}},
		{CodeOversizedLines,
			func(h *Health, c *clock) { h.Count("local_b", CodeOversizedLines) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_b"}},
		{CodeHostCallFailed,
			func(h *Health, c *clock) { h.Count("", CodeHostCallFailed) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			nil},
		{CodeWorkerRestarted,
			func(h *Health, c *clock) { h.Count("", CodeWorkerRestarted) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			nil},
		{CodeDecisionFailed,
			func(h *Health, c *clock) { h.Count("local_a", CodeDecisionFailed) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_a"}},
		{CodeSpoolRefused,
			func(h *Health, c *clock) { h.Count("local_b", CodeSpoolRefused) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_b"}},
		{CodeSettingsRepaired,
			func(h *Health, c *clock) { h.Count("local_a", CodeSettingsRepaired) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_a"}},
		{CodeConfigInvalid,
			func(h *Health, c *clock) {
				h.SetConfig(ConfigState{Origin: "last-good", Mode: "enforce", Enabled: true, Problem: "mode: \"x\" is not a mode"})
			},
			func(h *Health, c *clock) { h.SetConfig(ConfigState{Origin: "file", Mode: "enforce", Enabled: true}) },
			nil},
		{CodeTelemetryFailed,
			func(h *Health, c *clock) { h.Count("", CodeTelemetryFailed) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			nil},
		{CodeSessionsVolumeFull,
			func(h *Health, c *clock) {
				h.Scanned(ScanReport{Roots: []string{"/r"}, LowSpace: []string{"/r (12 KiB free)"}})
			},
			func(h *Health, c *clock) { h.Scanned(ScanReport{Roots: []string{"/r"}}) },
			[]string{"/r (12 KiB free)"}},
		{CodeUnguardedCall,
			func(h *Health, c *clock) { h.Count("local_a", CodeUnguardedCall) },
			func(h *Health, c *clock) { h.Snapshot(true) },
			[]string{"local_a"}},
		{CodeSessionQuarantined,
			func(h *Health, c *clock) {
				h.Quarantined("local_a", "disableAllHooks was set", c.now().Add(10*time.Minute))
			},
			func(h *Health, c *clock) { c.add(11 * time.Minute) },
			[]string{"local_a"}},
		{CodeCLIWithoutOnFailure,
			func(h *Health, c *clock) {
				h.SessionSeen("local_a", "/s/a")
				h.SessionHooked("local_a", false)
				h.CLIVersion("local_a", "2.1.329")
				h.CLIVersion("local_a", "2.1.220")
				h.SessionSeen("local_b", "/s/b")
				h.SessionHooked("local_b", false)
				h.CLIVersion("local_b", "2.1.400")
			},
			func(h *Health, c *clock) { h.SessionGone("local_a") },
			[]string{"local_a"}},
		{CodeManagedSettings,
			func(h *Health, c *clock) { h.SetDropIn("the managed-settings drop-in is not installed") },
			func(h *Health, c *clock) { h.SetDropIn("") },
			nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			h, c := newTestHealth()
			if got := warningCodes(h.Snapshot(false)); len(got) != 0 {
				t.Fatalf("warnings before the cause: %v", got)
			}
			tt.raise(h, c)
			s := h.Snapshot(false)
			w := warning(s, tt.code)
			if w == nil {
				t.Fatalf("%s not raised; got %v", tt.code, warningCodes(s))
			}
			if len(warningCodes(s)) != 1 {
				t.Errorf("other warnings raised too: %v", warningCodes(s))
			}
			if !slices.Equal(w.Sessions, tt.sessions) || w.Message == "" || w.Action == "" {
				t.Errorf("warning %+v, want sessions %v and a message and action", w, tt.sessions)
			}
			tt.clear(h, c)
			if got := warningCodes(h.Snapshot(false)); slices.Contains(got, tt.code) {
				t.Errorf("%s did not clear: %v", tt.code, got)
			}
		})
	}
}

// Versions are kept oldest first, a few per session, and the snapshot lists those of the live
// sessions; what does not read as a version is not kept.
func TestCLIVersionsAreBoundedAndListedOldestFirst(t *testing.T) {
	h, _ := newTestHealth()
	h.SessionSeen("local_a", "/s/a")
	for _, v := range []string{"2.1.400", "2.1.329", "$(id)", "2.1.329", "2.1.10", "2.0.1", "3.0.0", "2.1.2"} {
		h.CLIVersion("local_a", v)
	}
	s := h.Snapshot(false)
	want := []string{"2.0.1", "2.1.2", "2.1.10", "2.1.329"}
	if !slices.Equal(s.Sessions[0].CLIVersions, want) || !slices.Equal(s.CLIVersions, want) {
		t.Errorf("session versions %v, snapshot %v; want %v", s.Sessions[0].CLIVersions, s.CLIVersions, want)
	}
}

func TestSilentIsNotRaisedBeforeFifteenMinutes(t *testing.T) {
	h, c := newTestHealth()
	h.SessionSeen("local_a", "/s/a")
	h.SessionHooked("local_a", false)
	c.add(14 * time.Minute)
	if got := warningCodes(h.Snapshot(false)); len(got) != 0 {
		t.Errorf("warnings %v after 14 minutes", got)
	}
}

func TestGoneSessionsRaiseNothingAndAreForgottenAfterADay(t *testing.T) {
	h, c := newTestHealth()
	h.SessionSeen("local_a", "/s/a")
	h.SessionUnhooked("local_a", errors.New("x"))
	h.SessionGone("local_a")
	s := h.Snapshot(false)
	if len(s.Warnings) != 0 || s.Counts.Tracked != 1 || s.Counts.Live != 0 {
		t.Fatalf("gone session: warnings %v counts %+v", warningCodes(s), s.Counts)
	}
	c.add(25 * time.Hour)
	if s := h.Snapshot(false); s.Counts.Tracked != 0 {
		t.Errorf("a session gone for 25 h is still tracked")
	}
}

func TestTrackingIsBoundedAndOverflowCounted(t *testing.T) {
	h, _ := newTestHealth()
	for i := range MaxSessions + 5 {
		h.SessionSeen(fmt.Sprintf("local_%05d", i), "/d")
	}
	s := h.Snapshot(false)
	if s.Counts.Tracked != MaxSessions || s.Totals.SessionsDropped != 5 {
		t.Errorf("tracked %d dropped %d; want %d and 5", s.Counts.Tracked, s.Totals.SessionsDropped, MaxSessions)
	}
}

func TestCountersAndLatencyPercentiles(t *testing.T) {
	h, _ := newTestHealth()
	h.SessionSeen("local_a", "/s/a")
	h.SessionHooked("local_a", false)
	for i := 1; i <= 100; i++ {
		d := Allow
		if i%10 == 0 {
			d = Deny
		} else if i%25 == 0 {
			d = Ask
		}
		h.Event("local_a", d, time.Duration(i)*time.Millisecond)
	}
	s := h.Snapshot(true)
	if s.Totals.Events != 100 || s.Totals.Denies != 10 || s.Totals.Asks != 2 {
		t.Errorf("totals %+v", s.Totals)
	}
	if s.Daemon.LatencySamples != 100 || s.Daemon.LatencyP50Ms != 50 || s.Daemon.LatencyP99Ms != 99 {
		t.Errorf("latency p50 %v p99 %v n %d", s.Daemon.LatencyP50Ms, s.Daemon.LatencyP99Ms, s.Daemon.LatencySamples)
	}
	if s.Today.Date != "2026-11-20" || s.Today.Denies != 10 || s.Today.Events != 100 {
		t.Errorf("today %+v", s.Today)
	}
	if s2 := h.Snapshot(true); s2.Daemon.LatencySamples != 0 || s2.Totals.Events != 100 {
		t.Error("latencies are per heartbeat window, totals are for life")
	}
}

func TestTodayStartsAfreshAtMidnight(t *testing.T) {
	h, c := newTestHealth()
	h.Event("local_a", Deny, 0)
	c.add(13 * time.Hour) // 01:00 the next day
	if s := h.Snapshot(false); s.Today.Date != "2026-11-21" || s.Today.Denies != 0 || s.Totals.Denies != 1 {
		t.Errorf("today %+v totals %+v", s.Today, s.Totals)
	}
	h.Event("local_a", Ask, 0)
	if s := h.Snapshot(false); s.Today.Asks != 1 || s.Today.Denies != 0 {
		t.Errorf("today %+v", s.Today)
	}
}

func TestConcurrentUse(t *testing.T) {
	h, _ := newTestHealth()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("local_%d", g)
			for i := range 500 {
				h.SessionSeen(id, "/d")
				h.SessionHooked(id, i%2 == 0)
				h.Event(id, Deny, time.Millisecond)
				h.Count(id, CodeMalformedLines)
				if i%50 == 0 {
					h.Snapshot(i%100 == 0)
				}
			}
		}()
	}
	wg.Wait()
	if s := h.Snapshot(false); s.Totals.Events != 4000 || s.Totals.Counts[CodeMalformedLines] != 4000 {
		t.Errorf("totals %+v", s.Totals)
	}
}

func TestHeartbeatLogsWarnsAndWritesTheSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(time.Now)
		h.SetConfig(ConfigState{Origin: "file", Mode: "observe", Enabled: true})
		h.Count("local_a", CodeMalformedLines)
		var buf cbtest.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, nil))
		path := filepath.Join(t.TempDir(), "health.json")
		kick := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			done <- h.Heartbeat(ctx, HeartbeatOptions{Interval: time.Minute, Path: path, Logger: log, Kick: kick,
				Daemon: DaemonInfo{PID: 42, Version: "test", StartedAt: time.Now()}})
		}()
		synctest.Wait()
		first, err := ReadSnapshot(path)
		if err != nil || first.Daemon.PID != 42 || warning(first, CodeMalformedLines) == nil {
			t.Fatalf("first snapshot %+v %v", first, err)
		}
		time.Sleep(time.Minute) // the window with the malformed line was rotated at start
		synctest.Wait()
		s, _ := ReadSnapshot(path)
		if warning(s, CodeMalformedLines) != nil || s.Daemon.UptimeSeconds != 60 {
			t.Errorf("after a quiet minute: %v uptime %d", warningCodes(s), s.Daemon.UptimeSeconds)
		}
		h.Count("local_b", CodeOversizedLines)
		kick <- struct{}{} // SIGUSR1: file now, no log record, window kept
		synctest.Wait()
		if s, _ := ReadSnapshot(path); warning(s, CodeOversizedLines) == nil {
			t.Error("a kicked snapshot lacks the new warning")
		}
		cancel()
		<-done
		logs := buf.String()
		if n := strings.Count(logs, `"msg":"heartbeat"`); n != 2 {
			t.Errorf("%d heartbeat records, want 2 (start, one tick):\n%s", n, logs)
		}
		if !strings.Contains(logs, `"level":"WARN"`) || !strings.Contains(logs, `"code":"malformed_lines"`) {
			t.Errorf("no WARN record with the code:\n%s", logs)
		}
	})
}

func TestSnapshotRoundTripsThroughTheFile(t *testing.T) {
	h, _ := newTestHealth()
	h.SessionSeen("local_a", "/s/a")
	h.SessionHooked("local_a", true)
	path := filepath.Join(t.TempDir(), "state", "health.json")
	s := h.Snapshot(false)
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(back)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip differs:\n%s\n%s", a, b)
	}
}

// Session churn: thousands of sessions come and go in a day; health keeps the most recent gone
// ones only, so the daemon and health.json stay bounded.
func TestGoneSessionsAreBoundedUnderChurn(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := New(func() time.Time { return now })
	for i := range 2050 {
		id := fmt.Sprintf("local_%d", i)
		h.SessionSeen(id, "/s/"+id)
		h.SessionHooked(id, false)
		now = now.Add(time.Second)
		h.SessionGone(id)
	}
	h.SessionSeen("local_live", "/s/local_live")
	snap := h.Snapshot(false)
	if n := len(snap.Sessions); n > maxGone+maxGone/2+1 {
		t.Errorf("%d sessions kept after 2,050 came and went; want at most %d", n, maxGone+maxGone/2+1)
	}
	found := false
	for _, s := range snap.Sessions {
		found = found || s.ID == "local_live"
	}
	if !found {
		t.Error("the live session was pruned")
	}
}

// beating is a Health in enforce whose heartbeat (hourly) writes health.json, inside a synctest
// bubble, stopped with the test; it returns the file's path.
func beating(t *testing.T) (*Health, string) {
	t.Helper()
	h := New(time.Now)
	h.SetConfig(ConfigState{Origin: "file", Mode: "enforce", Enabled: true})
	path := filepath.Join(t.TempDir(), "health.json")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.Heartbeat(ctx, HeartbeatOptions{Interval: time.Hour, Path: path, Logger: slog.New(slog.DiscardHandler), Daemon: DaemonInfo{StartedAt: time.Now()}})
	synctest.Wait()
	return h, path
}

// The snapshot follows changes of state between heartbeats, so that status is never a heartbeat
// out of date: after a scan hooks sessions, after a quarantine.
func TestTheSnapshotFollowsChangesOfStateBetweenHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path := beating(t)
		if s, _ := ReadSnapshot(path); s.Counts.Hooked != 0 {
			t.Fatalf("at start: %+v", s.Counts)
		}
		for _, id := range []string{"local_a", "local_b"} {
			h.SessionSeen(id, "/s/"+id)
			h.SessionHooked(id, false)
		}
		h.Scanned(ScanReport{Roots: []string{"/s"}, Sessions: 2, Live: 2})
		time.Sleep(time.Second)
		synctest.Wait()
		s, _ := ReadSnapshot(path)
		if s.Counts.Hooked != 2 || !s.Healthy() {
			t.Errorf("a second after the first scan: %+v %v", s.Counts, warningCodes(s))
		}
		h.Quarantined("local_a", "disableAllHooks was set", time.Now().Add(10*time.Minute))
		time.Sleep(time.Second)
		synctest.Wait()
		if s, _ := ReadSnapshot(path); warning(s, CodeSessionQuarantined) == nil {
			t.Errorf("a second after a quarantine: %v", warningCodes(s))
		}
	})
}

// A session just found and not yet hooked is not unhooked: the first heartbeat must not say so
// for every session before the first injection. One still unhooked a minute on, is.
func TestASessionAwaitingItsHookIsNotUnhookedYet(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	h := New(c.now)
	h.SessionSeen("local_a", "/s/a")
	if w := warning(h.Snapshot(false), CodeSessionUnhooked); w != nil {
		t.Errorf("just seen: %v", w)
	}
	c.add(2 * time.Minute)
	if w := warning(h.Snapshot(false), CodeSessionUnhooked); w == nil {
		t.Error("two minutes on and still not hooked: no warning")
	}
}

// Objections observe only recorded are counted apart from applied ones, so that after a switch
// to enforce status does not show observe's would-be denies as denies.
func TestObservedObjectionsAreCountedApartFromAppliedOnes(t *testing.T) {
	h, _ := newTestHealth()
	for _, d := range []Decision{WouldDeny, WouldDeny, WouldAsk, Deny, Allow} {
		h.Event("local_a", d, 0)
	}
	s := h.Snapshot(false)
	if got := s.Today; got.Denies != 1 || got.Asks != 0 || got.WouldDenies != 2 || got.WouldAsks != 1 || got.Events != 5 {
		t.Errorf("today %+v", got)
	}
	if s.Totals.Denies != 1 || s.Totals.WouldDenies != 2 {
		t.Errorf("totals %+v", s.Totals)
	}
}

func TestSwitchingOffLeavesNoSessionHooked(t *testing.T) {
	h, _ := newTestHealth()
	for _, id := range []string{"local_a", "local_b"} {
		h.SessionSeen(id, "/s/"+id)
		h.SessionHooked(id, id == "local_b")
	}
	h.SwitchedOff()
	if c := h.Snapshot(false).Counts; c.Hooked != 0 || c.Unverified != 0 || c.Live != 2 {
		t.Errorf("counts after the switch off %+v", c)
	}
}

// Events make health.json follow them within eventKick, not one write per event.
func TestEventsAskForASnapshotAtMostEveryFewSeconds(t *testing.T) {
	h, c := newTestHealth()
	drain := func() bool { return asked(h) }
	drain()
	h.Event("local_a", Allow, 0)
	if !drain() {
		t.Fatal("the first event asked for no snapshot")
	}
	h.Event("local_a", Allow, 0)
	if drain() {
		t.Error("a second event within eventKick asked again")
	}
	c.add(eventKick)
	h.Event("local_a", Allow, 0)
	if !drain() {
		t.Error("an event after eventKick asked for none")
	}
}

// The last events of a burst reach health.json within eventKick of the write the first one asked
// for, not at the next heartbeat: status named the first of five calls for up to a heartbeat.
func TestTheLastEventsOfABurstReachTheSnapshotWithinAFewSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, path := beating(t)
		for i := range 5 {
			h.Event(fmt.Sprintf("local_%d", i), Allow, 0)
			time.Sleep(time.Second)
		}
		time.Sleep(eventKick)
		synctest.Wait()
		s, err := ReadSnapshot(path)
		if err != nil || s.Totals.Events != 5 {
			t.Fatalf("health.json holds %d events, want 5 (%v)", s.Totals.Events, err)
		}
	})
}

// A restarted daemon carries on today's counts from the last health.json, and only today's.
func TestTodaysCountsGoOnAcrossARestart(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.Local)
	h := New(func() time.Time { return now })
	h.Resume(Today{Date: "2026-11-28", Events: 9, Denies: 3})
	if got := h.Snapshot(false).Today; got.Events != 0 {
		t.Fatalf("yesterday's counts were carried on: %+v", got)
	}
	h.Resume(Today{Date: "2026-11-29", Events: 5, Denies: 2, Asks: 1})
	h.Event("s", Deny, 0)
	if got := h.Snapshot(false).Today; got.Events != 6 || got.Denies != 3 || got.Asks != 1 {
		t.Fatalf("today after a restart: %+v, want 6 events, 3 denies, 1 ask", got)
	}
}

// A rescan tells health of every session it finds as it was: that asks for no new health.json
// (with 10,000 sessions each one is megabytes); a change does.
func TestASessionFoundAsItWasAsksForNoNewSnapshot(t *testing.T) {
	h := New(time.Now)
	changed := func() bool {
		select {
		case <-h.changed:
			return true
		default:
			return false
		}
	}
	findings := map[string][]string{"CLAUDE.md": {"r1"}}
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"first seen", func() { h.SessionSeen("s", "/d/s") }, true},
		{"seen again", func() { h.SessionSeen("s", "/d/s") }, false},
		{"hooked", func() { h.SessionHooked("s", false) }, true},
		{"hooked again", func() { h.SessionHooked("s", false) }, false},
		{"hooked, unverified", func() { h.SessionHooked("s", true) }, true},
		{"hooked, unverified again", func() { h.SessionHooked("s", true) }, false},
		{"instructions found", func() { h.InstructionFindings("s", findings) }, true},
		{"the same found again", func() { h.InstructionFindings("s", map[string][]string{"CLAUDE.md": {"r1"}}) }, false},
		{"none found", func() { h.InstructionFindings("s", nil) }, true},
		{"none again", func() { h.InstructionFindings("s", map[string][]string{}) }, false},
		{"gone", func() { h.SessionGone("s") }, true},
		{"back", func() { h.SessionSeen("s", "/d/s") }, true},
	}
	for _, st := range steps {
		st.do()
		if got := changed(); got != st.want {
			t.Errorf("%s: asked for a new snapshot %v, want %v", st.name, got, st.want)
		}
	}
}

// In system mode each user's worker reports its own injector's passes: the snapshot shows their
// sum, a pass that found what the same worker's last one did asks for no new snapshot, and the
// passes of a worker gone for good stop counting.
func TestScansOfSeveralInjectorsAreSummedAndAnUnchangedOneWritesNothing(t *testing.T) {
	h := New(nil)
	drain := func() bool { return asked(h) }
	ada := ScanReport{Roots: []string{"/Users/ada/s"}, Sessions: 3, Live: 2, Watches: 10, LowSpace: []string{"/Users/ada/s (1 KiB free)"}}
	bob := ScanReport{Roots: []string{"/Users/bob/s"}, Sessions: 5, Live: 5, Watches: 20, WatchLimited: 1, Truncated: true}
	h.ScannedBy("ada", ada)
	h.ScannedBy("bob", bob)
	if !drain() {
		t.Fatal("a new pass asked for no snapshot")
	}
	got := h.Snapshot(false).Scan
	want := ScanReport{Roots: []string{"/Users/ada/s", "/Users/bob/s"}, Sessions: 8, Live: 7, Watches: 30, WatchLimited: 1,
		Truncated: true, LowSpace: []string{"/Users/ada/s (1 KiB free)"}}
	if !got.Equal(want) {
		t.Errorf("summed scan %+v, want %+v", got, want)
	}
	h.ScannedBy("ada", ada)
	if drain() {
		t.Error("a pass that found what the last one did asked for a snapshot")
	}
	ada.Live = 1
	h.ScannedBy("ada", ada)
	if !drain() || h.Snapshot(false).Scan.Live != 6 {
		t.Errorf("a pass that found less was not summed in (live %d)", h.Snapshot(false).Scan.Live)
	}
	h.ScanGone("bob")
	if !drain() || !h.Snapshot(false).Scan.Equal(ada) {
		t.Errorf("after bob's injector went, scan %+v, want ada's %+v", h.Snapshot(false).Scan, ada)
	}
	h.ScanGone("carol")
	if drain() {
		t.Error("forgetting an injector never heard of asked for a snapshot")
	}
}

// asked reports whether h asked for a snapshot since the last call, and takes the request.
func asked(h *Health) bool {
	select {
	case <-h.changed:
		return true
	default:
		return false
	}
}
