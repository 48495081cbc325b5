package collector

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
	"github.com/coworkbridge/coworkbridge/internal/recordcheck"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// fakeHealth records what the collector reports.
type fakeHealth struct {
	mu     sync.Mutex
	events map[health.Decision]int
	counts map[string]int
	instr  map[string][]string
}

func newFakeHealth() *fakeHealth {
	return &fakeHealth{events: map[health.Decision]int{}, counts: map[string]int{}}
}

func (h *fakeHealth) add(k string) { h.mu.Lock(); h.counts[k]++; h.mu.Unlock() }
func (h *fakeHealth) Event(id string, d health.Decision, _ time.Duration) {
	h.mu.Lock()
	h.events[d]++
	h.mu.Unlock()
}
func (h *fakeHealth) Quarantined(string, string, time.Time) { h.add("quarantined") }
func (h *fakeHealth) Count(_ string, code health.Code)      { h.add(string(code)) }
func (h *fakeHealth) CountN(_ string, code health.Code, n int) {
	h.mu.Lock()
	h.counts[string(code)] += n
	h.mu.Unlock()
}
func (h *fakeHealth) CLIVersion(_, v string) { h.add("cli " + v) }
func (h *fakeHealth) InstructionFindings(_ string, files map[string][]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.instr = files
}

func (h *fakeHealth) InstructionFiles(string, []string) {}

func (h *fakeHealth) count(k string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[k]
}

// flakySink is the real decision log behind a switch that makes writes fail.
type flakySink struct {
	*telemetry.Log
	failing sync.Mutex
	fail    int // writes still to fail
}

func (s *flakySink) WriteBatch(rs []telemetry.Record) error {
	s.failing.Lock()
	if s.fail > 0 {
		s.fail--
		s.failing.Unlock()
		return errors.New("disk full (simulated)")
	}
	s.failing.Unlock()
	return s.Log.WriteBatch(rs)
}

// fixture is a sessions root with one session, a decision log, an offsets file and a collector.
type fixture struct {
	t        testing.TB
	dir      string // the session folder
	outside  string
	logPath  string
	offsets  string
	cfg      managedconfig.Config
	health   *fakeHealth
	sink     *flakySink
	opts     Options
	c        *Collector
	cancel   context.CancelFunc
	done     chan error
	ridCount int
	// watcher, when set (useFake), stands in for the system's: appendRaw tells it of each append.
	watcher *fswatch.Fake
	// skew is how far the collector's clock runs ahead of the real one (see later).
	skew atomic.Int64
}

// later moves the collector's clock d ahead, for the logic it times (rate limits, graces, ages)
// without waiting for it. Timers it armed still run on the real clock.
func (f *fixture) later(d time.Duration) { f.skew.Add(int64(d)) }

// settle runs a full pass of every session after what the test did, and waits for it and for
// any pass it started at once: what has not happened then needs another change, or a timer.
func (f *fixture) settle() {
	f.t.Helper()
	before, _ := f.c.Passes()
	f.c.scheduleAll(true)
	var n uint64
	cbtest.WaitForf(f.t, func() bool {
		var idle bool
		n, idle = f.c.Passes()
		return n > before && idle
	}, func() string {
		return fmt.Sprintf("no pass after the test's changes (%d passes before, %d now)", before, n)
	})
}

// useFake runs the collector on a fake watcher, for tests in a synctest bubble: every timer is
// then the bubble's, and synctest.Wait says when the collector has done all it can.
func (f *fixture) useFake() *fswatch.Fake {
	f.watcher = fswatch.NewFake()
	f.opts.Watcher = f.watcher.Opener()
	return f.watcher
}

func newFixture(t testing.TB, mode managedconfig.Mode) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{t: t, dir: filepath.Join(base, "sessions", "acc", "org", "local_a"), outside: filepath.Join(base, "outside"),
		logPath: filepath.Join(base, "logs", "decisions.jsonl"), offsets: filepath.Join(base, "state", "offsets.json"), health: newFakeHealth()}
	for _, d := range []string{filepath.Join(f.dir, ".claude"), filepath.Join(f.dir, "outputs"), f.outside, filepath.Dir(f.logPath)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f.cfg = managedconfig.Config{Mode: mode, CoworkEnabled: true, HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second,
		RescanInterval: time.Hour, MaxLineBytes: 4096}
	f.sink = &flakySink{Log: telemetry.Open(telemetry.Options{Path: f.logPath, MaxFiles: 1})}
	t.Cleanup(func() { f.sink.Close() })
	return f
}

func (f *fixture) start() {
	f.t.Helper()
	store, err := spool.OpenStore(f.offsets)
	if err != nil {
		f.t.Fatal(err)
	}
	rec, err := telemetry.RecentRIDs(f.logPath, 1<<20)
	if err != nil {
		f.t.Fatal(err)
	}
	cls, err := classifier.New(classifier.Policy{})
	if err != nil {
		f.t.Fatal(err)
	}
	opts := f.opts
	opts.Health, opts.Offsets, opts.Recorded = f.health, store, rec
	if opts.Now == nil {
		opts.Now = func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) }
	}
	if opts.Sink == nil {
		opts.Sink = f.sink
	}
	f.c = New(f.cfg, cls, opts)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan error, 1)
	go func() { f.done <- f.c.Run(ctx) }()
	f.c.Track(f.dir)
	f.t.Cleanup(f.stop)
	if f.watcher != nil { // in a synctest bubble: the session is set up and watched once all wait
		synctest.Wait()
	}
}

func (f *fixture) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	if err := <-f.done; err != nil {
		f.t.Errorf("Run = %v", err)
	}
	f.cancel = nil
}

func (f *fixture) bridge(name string) string {
	return filepath.Join(f.dir, ".claude", "coworkbridge", name)
}

func (f *fixture) nextRID() string {
	f.ridCount++
	return fmt.Sprintf("%032x", f.ridCount)
}

// envelope renders a spool line as the hook writes it.
func envelope(rid, mode, tool, input string) string {
	return fmt.Sprintf(`{"v":1,"rid":%q,"mode":%q,"event":{"session_id":"s","cwd":"/sessions/x/mnt/outputs","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":%s}}`, rid, mode, tool, input)
}

func bash(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return string(b)
}

func (f *fixture) appendRaw(s string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.bridge("events.jsonl")), 0o700); err != nil {
		f.t.Fatal(err)
	}
	file, err := os.OpenFile(f.bridge("events.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(s); err != nil {
		f.t.Fatal(err)
	}
	if f.watcher != nil && !f.watcher.Change(f.bridge("events.jsonl"), fswatch.Write) {
		f.t.Fatal("the spool's folder is not watched")
	}
}

// records reads the decision log.
func (f *fixture) records() []telemetry.Record {
	f.t.Helper()
	data, err := os.ReadFile(f.logPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		f.t.Fatal(err)
	}
	var out []telemetry.Record
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // a write still in progress: readers may see part of one
		}
		var r telemetry.Record
		if err := json.Unmarshal(line, &r); err != nil {
			f.t.Fatalf("decision log line %q: %v", line, err)
		}
		if err := checkRecord(line); err != nil { // every record the pipeline writes
			f.t.Fatalf("decision log line %s: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func (f *fixture) waitRecords(n int) []telemetry.Record {
	f.t.Helper()
	var got []telemetry.Record
	cbtest.WaitForf(f.t, func() bool { got = f.records(); return len(got) >= n }, func() string {
		var have []string
		for _, r := range got {
			have = append(have, r.Rule+" "+string(r.Input))
		}
		return fmt.Sprintf("%d records in the decision log, want %d; have %q", len(got), n, have)
	})
	return got
}

// decision waits for the decision file of rid and returns its content.
func (f *fixture) decision(rid string) string {
	f.t.Helper()
	var data []byte
	cbtest.WaitForf(f.t, func() bool {
		var err error
		data, err = os.ReadFile(f.bridge(filepath.Join("decisions", rid+".json")))
		return err == nil
	}, func() string { return "no decision file for " + rid })
	return string(data)
}

func decisionOf(t *testing.T, out string) string {
	t.Helper()
	if out == "" {
		return "allow"
	}
	var o struct {
		H struct {
			D string `json:"permissionDecision"`
			R string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("decision %q: %v", out, err)
	}
	if !strings.HasPrefix(o.H.R, "coworkbridge: ") {
		t.Errorf("reason %q does not name coworkbridge", o.H.R)
	}
	return o.H.D
}

func TestEnforceAnswersEachWaitingHookAndRecordsEveryCall(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	calls := []struct {
		tool, input, want string
	}{
		{"Bash", bash("ls -la"), "allow"},
		{"Bash", bash("rm -rf ~"), "deny"},
		{"Read", `{"file_path":"/home/u/.ssh/id_rsa"}`, "deny"},
		{"Bash", bash("git restore src/main.go"), "ask"},
	}
	for _, c := range calls {
		rid := f.nextRID()
		f.appendRaw(envelope(rid, "enforce", c.tool, c.input) + "\n")
		if got := decisionOf(t, f.decision(rid)); got != c.want {
			t.Errorf("%s %s: decision %s, want %s", c.tool, c.input, got, c.want)
		}
	}
	recs := f.waitRecords(len(calls))
	for i, r := range recs {
		if string(r.Decision) != calls[i].want || !r.Enforced || r.Session != "local_a" || r.Transport != telemetry.TransportSpool || r.RID == "" {
			t.Errorf("record %d = %+v", i, r)
		}
	}
	if _, err := os.Stat(f.bridge("alive")); err != nil {
		t.Errorf("no alive lease while running: %v", err)
	}
}

func TestNoObjectionInTheVMIsTheHooksStagedCopyAndADenyIsWrittenBesideIt(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	for _, c := range []struct{ cmd, want string }{{"ls -la", "allow"}, {"rm -rf ~", "deny"}} {
		rid := f.nextRID()
		line := envelope(rid, "enforce", "Bash", bash(c.cmd))
		staged := f.bridge(filepath.Join("staging", ".ev-"+rid))
		cbtest.WaitForf(t, func() bool { return os.WriteFile(staged, []byte("\n"+line+"\n"), 0o600) == nil },
			func() string { return "the daemon made no staging folder" })
		before, _ := os.Stat(staged)
		f.appendRaw("\n" + line + "\n")
		if got := decisionOf(t, f.decision(rid)); got != c.want {
			t.Fatalf("%s: decision %s, want %s", c.cmd, got, c.want)
		}
		after, _ := os.Stat(f.bridge(filepath.Join("decisions", rid+".json")))
		_, err := os.Stat(staged)
		if adopted := os.SameFile(before, after); adopted != (c.want == "allow") || adopted == (err == nil) {
			t.Errorf("%s: the decision is the staged copy: %v (copy still there: %v)", c.cmd, adopted, err == nil)
		}
	}
}

func TestObserveNeverWritesDecisionsButRecordsTheVerdict(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.start()
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "observe", "Bash", bash("rm -rf ~")) + "\n")
	recs := f.waitRecords(1)
	if recs[0].Decision != "deny" || recs[0].Enforced || recs[0].Mode != "observe" {
		t.Errorf("record = %+v, want a would-be deny, not enforced", recs[0])
	}
	if entries, _ := os.ReadDir(f.bridge("decisions")); len(entries) != 0 {
		t.Errorf("observe mode wrote decisions: %v", entries)
	}
}

func TestAnEnforceHookLeftFromBeforeASwitchToObserveIsReleased(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.start()
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "enforce", "Bash", bash("rm -rf ~")) + "\n")
	if got := f.decision(rid); got != "" {
		t.Errorf("decision %q, want no objection: the admin chose observe", got)
	}
}

func TestMalformedLinesAreDeniedInEnforceAndCountedInBoth(t *testing.T) {
	for _, mode := range []managedconfig.Mode{managedconfig.Enforce, managedconfig.Observe} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t, mode)
			f.start()
			cut, null := f.nextRID(), f.nextRID()
			f.appendRaw(envelope(cut, string(mode), "Bash", bash("ls"))[:70] + "\n")
			f.appendRaw(fmt.Sprintf(`{"v":1,"rid":%q,"mode":%q,"event":null}`, null, mode) + "\n")
			f.appendRaw("garbage without any rid\n")
			recs := f.waitRecords(3)
			for _, r := range recs {
				if r.Rule != ruleid.Malformed || r.Decision != "deny" {
					t.Errorf("record = %+v", r)
				}
			}
			if mode == managedconfig.Enforce {
				for _, rid := range []string{cut, null} {
					if got := decisionOf(t, f.decision(rid)); got != "deny" {
						t.Errorf("malformed line %s: decision %s, want deny", rid, got)
					}
				}
			} else if entries, _ := os.ReadDir(f.bridge("decisions")); len(entries) != 0 {
				t.Errorf("observe wrote decisions: %v", entries)
			}
			cbtest.WaitForf(t, func() bool { return f.health.count(string(health.CodeMalformedLines)) == 3 }, func() string {
				return fmt.Sprintf("malformed count %d, want 3", f.health.count(string(health.CodeMalformedLines)))
			})
		})
	}
}

func TestOversizedLineIsDeniedByItsRecoveredRID(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	big, small := f.nextRID(), f.nextRID()
	f.appendRaw(envelope(big, "enforce", "Write", fmt.Sprintf(`{"file_path":"a","content":%q}`, strings.Repeat("x", 10000))) + "\n")
	f.appendRaw(envelope(small, "enforce", "Bash", bash("ls")) + "\n")
	out := f.decision(big)
	if decisionOf(t, out) != "deny" || !strings.Contains(out, "max_line_bytes") {
		t.Errorf("oversized decision = %q", out)
	}
	if got := decisionOf(t, f.decision(small)); got != "allow" {
		t.Errorf("the line after an oversized one: %s", got)
	}
	recs := f.waitRecords(2)
	if recs[0].Rule != ruleid.Oversized || recs[0].RID != big {
		t.Errorf("record = %+v", recs[0])
	}
	// The record is written first, so that whoever sees the count finds it: the count may come
	// a moment after (a CI run once looked between the two).
	cbtest.WaitFor(t, "the oversized line counted", func() bool { return f.health.count(string(health.CodeOversizedLines)) == 1 })
}

func TestTransientLogFailureIsRetriedWithNothingLostOrDoubled(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.sink.fail = 2
	f.start()
	var rids []string
	for range 5 {
		rid := f.nextRID()
		rids = append(rids, rid)
		f.appendRaw(envelope(rid, "enforce", "Bash", bash("rm -rf ~")) + "\n")
		// The decision is not held up by the failing log.
		if got := decisionOf(t, f.decision(rid)); got != "deny" {
			t.Errorf("decision %s", got)
		}
		os.Remove(f.bridge(filepath.Join("decisions", rid+".json"))) // the hook consumes it
	}
	f.waitRecords(5)
	f.settle()
	assertEachOnce(t, f.records(), rids)
	if f.health.count(string(health.CodeTelemetryFailed)) < 1 {
		t.Error("the failed writes were not reported")
	}
	// No decision was written twice: the retry found them done.
	if entries, _ := os.ReadDir(f.bridge("decisions")); len(entries) != 0 {
		t.Errorf("decisions rewritten on retry: %v", entries)
	}
}

func assertEachOnce(t *testing.T, recs []telemetry.Record, rids []string) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.RID]++
	}
	for _, rid := range rids {
		if seen[rid] != 1 {
			t.Errorf("rid %s recorded %d times, want exactly once", rid, seen[rid])
		}
	}
	if len(recs) != len(rids) {
		t.Errorf("%d records for %d events", len(recs), len(rids))
	}
}

func TestOffsetsSurviveARestartWithNoReplay(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.start()
	var rids []string
	for range 3 {
		rids = append(rids, f.nextRID())
		f.appendRaw(envelope(rids[len(rids)-1], "observe", "Bash", bash("ls")) + "\n")
	}
	f.waitRecords(3)
	f.stop()
	for range 2 {
		rids = append(rids, f.nextRID())
		f.appendRaw(envelope(rids[len(rids)-1], "observe", "Bash", bash("ls")) + "\n")
	}
	f.start()
	f.waitRecords(5)
	f.settle()
	assertEachOnce(t, f.records(), rids)
}

func TestAReplayAfterACrashIsSkippedByRID(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.start()
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "observe", "Bash", bash("ls")) + "\n")
	f.waitRecords(1)
	f.stop()
	// As if the daemon died after the log write and before the offsets commit.
	os.Remove(f.offsets)
	next := f.nextRID()
	f.appendRaw(envelope(next, "observe", "Bash", bash("ls")) + "\n")
	f.start()
	f.waitRecords(2)
	f.settle()
	assertEachOnce(t, f.records(), []string{rid, next})
}

func TestReplacedAndTruncatedSpoolsAreReadFromTheStart(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.start()
	a := f.nextRID()
	f.appendRaw(envelope(a, "observe", "Bash", bash("ls -la /tmp/some/long/path/to/make/the/line/longer")) + "\n")
	f.waitRecords(1)
	// Truncated: the same file, shorter than the offset.
	if err := os.Truncate(f.bridge("events.jsonl"), 0); err != nil {
		t.Fatal(err)
	}
	b := f.nextRID()
	f.appendRaw(envelope(b, "observe", "Bash", bash("ls")) + "\n")
	f.waitRecords(2)
	// Replaced: a new file at the name.
	os.Remove(f.bridge("events.jsonl"))
	c := f.nextRID()
	f.appendRaw(envelope(c, "observe", "Bash", bash("ls -la /tmp/some/long/path/to/make/the/line/longer/still")) + "\n")
	f.waitRecords(3)
	f.settle()
	assertEachOnce(t, f.records(), []string{a, b, c})
}

func TestRotationLosesNothingEvenForAHookThatOpenedTheOldSpool(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.opts.RotateBytes = 2000
	// The grace is a hook's lifetime; on the real clock the test never reaches it (a slow machine
	// would otherwise remove the first rotated file before the late write), on the collector's it
	// is passed below.
	f.opts.RotateGrace = time.Minute
	f.start()
	var rids []string
	// A hook that opened the spool before it was renamed and writes after.
	early, err := os.OpenFile(f.bridge("events.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		rid := f.nextRID()
		rids = append(rids, rid)
		f.appendRaw(envelope(rid, "observe", "Bash", bash("ls")) + "\n")
		f.waitRecords(len(rids)) // drained, and rotated past RotateBytes, between two appends
	}
	late := f.nextRID()
	rids = append(rids, late)
	if _, err := early.WriteString(envelope(late, "observe", "Bash", bash("echo late")) + "\n"); err != nil {
		t.Fatal(err)
	}
	early.Close()
	f.waitRecords(len(rids))
	// Everything drained and the rotated files removed after the grace.
	f.later(2 * time.Minute)
	f.settle()
	cbtest.WaitForf(t, func() bool {
		entries, _ := os.ReadDir(f.bridge(""))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "events.r") {
				return false
			}
		}
		return true
	}, func() string {
		entries, _ := os.ReadDir(f.bridge(""))
		return fmt.Sprintf("rotated spools remain: %v", entries)
	})
	assertEachOnce(t, f.records(), rids)
}

func TestLinkedSpoolIsRefusedAndReportedWithNothingReadOutside(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	secret := filepath.Join(f.outside, "events.jsonl")
	os.WriteFile(secret, []byte(envelope(f.nextRID(), "enforce", "Bash", bash("ls"))+"\n"), 0o600)
	os.MkdirAll(f.bridge(""), 0o700)
	if err := os.Symlink(secret, f.bridge("events.jsonl")); err != nil {
		t.Fatal(err)
	}
	f.start()
	cbtest.WaitForf(t, func() bool { return f.health.count(string(health.CodeSpoolRefused)) >= 1 }, func() string { return "the linked spool was not reported" })
	// The link is taken away (never followed), the attempt recorded, the session quarantined.
	recs := f.waitRecords(1)
	if len(recs) != 1 || recs[0].Rule != ruleid.PlantedSpool {
		t.Errorf("records %+v: the linked spool was read, or the plant not recorded", recs)
	}
	if _, err := os.Lstat(f.bridge("events.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the link is still there: %v", err)
	}
	if data, _ := os.ReadFile(secret); !strings.Contains(string(data), "ls") {
		t.Error("the link's target was touched")
	}
	if f.health.count("quarantined") != 1 {
		t.Error("not quarantined")
	}
}

func TestHardLinkedSpoolIsRefusedAndReportedWithNothingReadOutside(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	outside := filepath.Join(f.outside, "events.jsonl")
	os.WriteFile(outside, []byte(envelope(f.nextRID(), "enforce", "Bash", bash("ls /outside"))+"\n"), 0o600)
	os.MkdirAll(f.bridge(""), 0o700)
	if err := os.Link(outside, f.bridge("events.jsonl")); err != nil {
		t.Skip("hard links unavailable here:", err)
	}
	f.start()
	recs := f.waitRecords(1)
	if len(recs) != 1 || recs[0].Rule != ruleid.PlantedSpool || strings.Contains(string(recs[0].Input), "/outside") {
		t.Errorf("records %+v: the hard-linked spool was read, or the plant not recorded", recs)
	}
	if fi, err := os.Lstat(f.bridge("events.jsonl")); err == nil && session.Links(fi) > 1 {
		t.Error("the hard link is still there")
	}
	if data, _ := os.ReadFile(outside); !strings.Contains(string(data), "/outside") {
		t.Error("the other file was touched")
	}
	if f.health.count("quarantined") != 1 {
		t.Error("not quarantined")
	}
}

func TestAFIFOOrFolderPlantedAtTheSpoolIsTakenAway(t *testing.T) {
	for name, plant := range map[string]func(p string) error{
		"a FIFO":   func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"a folder": func(p string) error { return os.MkdirAll(filepath.Join(p, "inside"), 0o700) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, managedconfig.Enforce)
			os.MkdirAll(f.bridge(""), 0o700)
			if err := plant(f.bridge("events.jsonl")); err != nil {
				t.Fatal(err)
			}
			f.start()
			if recs := f.waitRecords(1); recs[0].Rule != ruleid.PlantedSpool {
				t.Errorf("record %+v", recs[0])
			}
			// Hooks can append again: the next line is judged as usual.
			rid := f.nextRID()
			f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
			if got := f.decision(rid); !strings.Contains(got, "quarantined") {
				t.Errorf("decision %q", got)
			}
		})
	}
}

func TestLinkedDecisionsFolderFailsClosedAndWritesNothingOutside(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	// The collector recreates the folder as it renews the lease: retry until the link stands.
	cbtest.WaitForf(t, func() bool {
		os.RemoveAll(f.bridge("decisions"))
		return os.Symlink(f.outside, f.bridge("decisions")) == nil
	}, func() string { return "could not plant the link" })
	rid := f.nextRID()
	f.appendRaw(envelope(rid, "enforce", "Bash", bash("ls")) + "\n")
	f.waitRecords(1)
	if entries, _ := os.ReadDir(f.outside); len(entries) != 0 {
		t.Errorf("written outside the session: %v", entries)
	}
	if f.health.count(string(health.CodeDecisionFailed)) == 0 {
		t.Error("the failed decision was not reported")
	}
}

func TestAliveLeaseIsWrittenOnTrackAndWithdrawnOnShutdown(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	data, err := os.ReadFile(f.bridge("alive"))
	if err != nil {
		t.Fatalf("Track returned before the lease was written: %v", err)
	}
	var until int64
	fmt.Sscan(string(data), &until)
	if ahead := time.Until(time.Unix(until, 0)); ahead < 10*time.Second {
		t.Errorf("lease runs only %v ahead", ahead)
	}
	f.stop()
	if _, err := os.Stat(f.bridge("alive")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lease still there after shutdown: %v", err)
	}
}

func TestParallelSessionsAreDrainedInOrderEach(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	base := filepath.Dir(f.dir)
	const sessions, calls = 8, 25
	var dirs []string
	for i := range sessions {
		d := filepath.Join(base, fmt.Sprintf("local_p%d", i))
		os.MkdirAll(filepath.Join(d, ".claude", "coworkbridge"), 0o700)
		f.c.Track(d)
		dirs = append(dirs, d)
	}
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Go(func() {
			file, _ := os.OpenFile(filepath.Join(d, ".claude", "coworkbridge", "events.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			defer file.Close()
			for j := range calls {
				file.WriteString(envelope(fmt.Sprintf("%016x%016x", i, j), "enforce", "Bash", bash("ls")) + "\n")
			}
		})
	}
	wg.Wait()
	recs := f.waitRecords(sessions * calls)
	last := map[string]string{}
	for _, r := range recs {
		if prev, ok := last[r.Session]; ok && r.RID <= prev {
			t.Fatalf("session %s: %s recorded after %s", r.Session, r.RID, prev)
		}
		last[r.Session] = r.RID
	}
}

// Hooks start each append on a fresh line, so junk the agent left unterminated becomes a
// malformed line of its own and the hook's call is judged with its input.
func TestAJunkPrefixIsAMalformedLineOfItsOwnAndTheCallIsJudged(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.start()
	rid := f.nextRID()
	f.appendRaw(`{"v":1,"rid":"` + strings.Repeat("a", 32) + `","junk`)
	f.appendRaw("\n" + envelope(rid, "enforce", "Bash", bash("rm -rf ~")) + "\n")
	if got := f.decision(rid); !strings.Contains(got, `"deny"`) {
		t.Errorf("decision %q: the call was not judged on its own input", got)
	}
	recs := f.waitRecords(2)
	rules := []string{recs[0].Rule, recs[1].Rule}
	if !slices.Contains(rules, ruleid.Malformed) || recs[1].RID != rid || !strings.Contains(string(recs[1].Input), "rm -rf") {
		t.Errorf("records:%s", describe(recs))
	}
}

var recordChecker = sync.OnceValues(func() (*recordcheck.Checker, error) { return recordcheck.New(telemetry.RecordSchema) })

// checkRecord validates one decision-log line against the schema shipped for pipelines.
func checkRecord(line []byte) error {
	c, err := recordChecker()
	if err != nil {
		return err
	}
	return c.Check(line)
}

// openFDs counts this process's open descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(entries)
}

// Idle sessions hold no descriptor, and sessions deleted in bulk, some while their passes run,
// give back every descriptor their passes held: a pass that reopened a session's folders after
// it was untracked closes them.
func TestDeletedSessionsGiveBackTheirDescriptors(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.start()
	f.settle()
	f.settle()
	baseline := openFDs(t)
	base := filepath.Dir(f.dir)
	const n = 60
	var dirs []string
	for i := range n {
		d := filepath.Join(base, fmt.Sprintf("local_fd%d", i))
		os.MkdirAll(filepath.Join(d, ".claude", "coworkbridge"), 0o700)
		f.c.Track(d)
		dirs = append(dirs, d)
	}
	f.settle()
	// Housekeeping alone keeps nothing open: each session held its folders (about five
	// descriptors) before. A few may still be held for keptIdle by a pass the lease's own
	// renewal started, when its event came before the lane knew the new lease as its own.
	f.later(2 * time.Minute)
	f.settle()
	f.settle()
	if idle := openFDs(t); idle > baseline+2*n {
		t.Errorf("%d idle sessions hold %d descriptors", n, idle-baseline)
	}
	for _, d := range dirs { // busy, then gone while their passes may still run
		os.WriteFile(filepath.Join(d, ".claude", "coworkbridge", "events.jsonl"), []byte(envelope(f.nextRID(), "observe", "Bash", bash("ls"))+"\n"), 0o600)
	}
	f.c.scheduleAll(false)
	for _, d := range dirs {
		os.RemoveAll(d)
		f.c.Untrack(filepath.Base(d))
	}
	f.settle()
	if after := openFDs(t); after > baseline+8 {
		t.Errorf("%d descriptors open after %d sessions were deleted, %d before they were made: their folders are still held", after, n, baseline)
	}
	if kept := f.c.env.Kept.Load(); kept > 1 {
		t.Errorf("%d folder handles still counted as kept", kept)
	}
}
