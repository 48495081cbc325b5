package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// A lane is tested by running its passes directly: no scheduler, no watcher, no goroutine, and
// a clock the test moves. What a pass wants done beyond its session is its Result.

// clock is a time the test sets.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

// memSink is a decision log in memory whose writes fail while fail > 0.
type memSink struct {
	mu       sync.Mutex
	recs     []telemetry.Record
	fail     int
	attempts int
}

func (s *memSink) WriteBatch(rs []telemetry.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if s.fail > 0 {
		s.fail--
		return errors.New("disk full (simulated)")
	}
	s.recs = append(s.recs, rs...)
	return nil
}

func (s *memSink) Sync() error { return nil }

// countingHealth counts what the lane reports, by code or name.
type countingHealth struct {
	mu     sync.Mutex
	counts map[string]int
}

func (h *countingHealth) add(k string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[string]int{}
	}
	h.counts[k] += n
}
func (h *countingHealth) Event(_ string, d health.Decision, _ time.Duration) { h.add(string(d), 1) }
func (h *countingHealth) Quarantined(string, string, time.Time)              { h.add("quarantined", 1) }
func (h *countingHealth) InstructionFindings(string, map[string][]string)    {}
func (h *countingHealth) InstructionFiles(string, []string)                  {}
func (h *countingHealth) CLIVersion(_, v string)                             { h.add("cli "+v, 1) }
func (h *countingHealth) Count(_ string, code health.Code)                   { h.add(string(code), 1) }
func (h *countingHealth) CountN(_ string, code health.Code, n int)           { h.add(string(code), n) }
func (h *countingHealth) count(k string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[k]
}

// laneFixture is one session folder with its lane.
type laneFixture struct {
	t      testing.TB
	dir    string
	clock  *clock
	sink   *memSink
	health *countingHealth
	env    *Env
	lane   *Lane
	pol    *Policy
	rids   int
}

func newLane(t testing.TB, mode managedconfig.Mode) *laneFixture {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "sessions", "local_a")
	if err := os.MkdirAll(filepath.Join(dir, ".claude", "coworkbridge", "decisions"), 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := spool.OpenStore(filepath.Join(base, "offsets.json"))
	if err != nil {
		t.Fatal(err)
	}
	cls, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	f := &laneFixture{t: t, dir: dir, clock: &clock{time.Now()}, sink: &memSink{}, health: &countingHealth{}}
	f.env = &Env{Log: slog.New(slog.DiscardHandler), Health: f.health, Sink: f.sink, Offsets: store,
		Replays: NewReplays(nil), Now: f.clock.Now, Removals: session.NewRemovals(f.clock.Now),
		Leases: &Leases{}, Outage: &Outage{},
		Limits: Limits{BatchLines: 256, RotateBytes: 8 << 20, RotateIdle: time.Hour, RotateGrace: 10 * time.Second,
			SessionBytes: SessionBytes, BudgetRecords: 600, BudgetBytes: 4 << 20, QuarantineFor: 10 * time.Minute,
			ReconcileGrace: 5 * time.Second, ForgedAfter: time.Minute}}
	cfg := managedconfig.Config{Mode: mode, CoworkEnabled: true, HookTimeout: 30 * time.Second,
		DecisionTimeout: 10 * time.Second, RescanInterval: time.Hour, MaxLineBytes: 4096}
	f.pol = NewPolicy(cfg, Local(cfg, cls, f.clock.Now, ""))
	f.lane = New(f.env, dir, "")
	t.Cleanup(f.lane.Release)
	return f
}

// pass runs one pass that reads the spool if it moved and, as no watch covers them, the
// transcripts.
func (f *laneFixture) pass() Result {
	return f.lane.Pass(context.Background(), Work{Policy: f.pol, Lease: Lease{Max: f.clock.now.Add(time.Minute)}})
}

// housekeep runs a housekeeping pass, which writes the lease.
func (f *laneFixture) housekeep() Result {
	until := f.clock.now.Add(30 * time.Second)
	return f.lane.Pass(context.Background(), Work{Policy: f.pol, Housekeep: true, Reconcile: true, Lease: Lease{Until: until, Max: until}})
}

func (f *laneFixture) nextRID() string {
	f.rids++
	return fmt.Sprintf("%032x", f.rids)
}

func (f *laneFixture) spool() string {
	return filepath.Join(f.dir, ".claude", "coworkbridge", "events.jsonl")
}

// write appends raw text to the spool, as a hook does.
func (f *laneFixture) write(s string) {
	f.t.Helper()
	file, err := os.OpenFile(f.spool(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	if _, err := io.WriteString(file, s); err != nil {
		f.t.Fatal(err)
	}
}

// call appends a Bash call in the hook's mode.
func (f *laneFixture) call(mode, cmd string) string {
	rid := f.nextRID()
	f.write(envelope(rid, mode, "Bash", bash(cmd)) + "\n")
	return rid
}

func (f *laneFixture) records() []telemetry.Record {
	f.sink.mu.Lock()
	defer f.sink.mu.Unlock()
	return append([]telemetry.Record(nil), f.sink.recs...)
}

// decision returns the decision file of rid ("" is a no objection), and whether there is one.
func (f *laneFixture) decision(rid string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(f.dir, ".claude", "coworkbridge", "decisions", rid+".json"))
	return string(data), err == nil
}

// answered reports whether rid has its answer, and whether that is a deny.
func (f *laneFixture) answered(rid string) (ok, denied bool) {
	out, ok := f.decision(rid)
	return ok, strings.Contains(out, `"permissionDecision":"deny"`)
}

// envelope renders a spool line as the hook writes it.
func envelope(rid, mode, tool, input string) string {
	return fmt.Sprintf(`{"v":1,"rid":%q,"mode":%q,"event":{"session_id":"s","cwd":"/sessions/x/mnt/outputs","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":%s}}`, rid, mode, tool, input)
}

func bash(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return string(b)
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
