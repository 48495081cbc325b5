package collector

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/flood"
	"github.com/coworkbridge/coworkbridge/collector/internal/lane"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/spool"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

func TestASessionOverItsBudgetIsSummarisedNotLoggedLineByLine(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	f.opts.BudgetRecords = 20
	f.start()
	f.idle() // followed, first pass done: what comes now is live
	var b strings.Builder
	for range 100 { // forged lines, no hook waiting for them
		fmt.Fprintln(&b, envelope(f.nextRID(), "observe", "Bash", bash("echo noise")))
	}
	f.appendRaw(b.String())
	f.waitRecords(21)
	cbtest.WaitForf(t, func() bool { return f.health.count("quarantined") == 1 }, func() string { return "not quarantined" })
	recs := f.records()
	if len(recs) != 21 || recs[20].Rule != ruleid.Flood {
		t.Fatalf("%d records, last %+v; want 20 lines and one summary", len(recs), recs[len(recs)-1])
	}
	// Every event was still judged: the spool is drained, nothing waits to be replayed.
	fi, err := os.Stat(f.bridge("events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := spool.IdentityOf(fi)
	cbtest.WaitForf(t, func() bool { return f.c.opts.Offsets.Get(lane.OffsetKey(f.dir, id)).Offset == int64(b.Len()) },
		func() string { return "the spool was not drained past the suppressed events" })
}

func TestTheBudgetIsPerSession(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.opts.BudgetRecords = 5
	f.start()
	var b strings.Builder
	for range 5 {
		fmt.Fprintln(&b, envelope(f.nextRID(), "observe", "Bash", bash("ls")))
	}
	f.appendRaw(b.String())
	if recs := f.waitRecords(5); len(recs) != 5 || recs[4].Rule == ruleid.Flood {
		t.Fatalf("records within the budget were summarised: %+v", recs)
	}
	if f.health.count("quarantined") != 0 {
		t.Error("quarantined within its budget")
	}
}

// Events that piled up while the daemon was down are caught up whole: that is no flood.
func TestABacklogFromWhileTheDaemonWasDownIsNotCountedAgainstTheBudget(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.opts.BudgetRecords = 5
	var b strings.Builder
	for range 50 {
		fmt.Fprintln(&b, envelope(f.nextRID(), "observe", "Bash", bash("ls")))
	}
	f.appendRaw(b.String())
	f.start()
	recs := f.waitRecords(50)
	for _, r := range recs {
		if r.Rule == ruleid.Flood {
			t.Fatalf("the backlog was taken for a flood: %+v", r)
		}
	}
}

// The agent floods the spool with forged lines to push its next real call out of the record:
// over the budget, a routine call is left out of the log line by line only until its transcript
// shows it, and is then logged after all; the forged lines, which no transcript shows, stay
// summarised.
func TestARealCallAfterAFloodOfForgedLinesIsStillLoggedLineByLine(t *testing.T) {
	f := newFixture(t, managedconfig.Observe)
	f.opts.BudgetRecords = 20
	f.start()
	f.idle()
	var b strings.Builder
	for i := range 600 {
		fmt.Fprintln(&b, envelopeFor(f.nextRID(), "observe", fmt.Sprintf("toolu_noise_%d", i), "echo noise"))
	}
	f.appendRaw(b.String())
	f.waitRecords(21) // 20 lines and the summary
	f.appendRaw(envelopeFor(f.nextRID(), "observe", "toolu_real", "git status --short real.example") + "\n")
	f.idle()
	f.transcript(toolUse("toolu_real", "git status --short real.example"), toolResult("toolu_real", false))
	cbtest.WaitForf(t, func() bool {
		for _, r := range f.records() {
			if strings.Contains(string(r.Input), "real.example") && strings.Contains(r.Reason, "logged late") {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("the real call is not in the log line by line; %d records", len(f.records()))
	})
	for _, r := range f.records() {
		if strings.Contains(string(r.Input), "echo noise") && strings.Contains(r.Reason, "logged late") {
			t.Fatalf("a forged line was logged as confirmed: %+v", r)
		}
	}
}

// A dangerous call hidden in a flood of forged lines has its own record at once, in either mode,
// with no transcript needed: the budget judges first and folds only routine records. The summary
// of the minute counts what it folded by rule and quotes the first and last, redacted.
func TestADangerousCallHiddenInAFloodHasItsOwnRecord(t *testing.T) {
	for _, mode := range []managedconfig.Mode{managedconfig.Observe, managedconfig.Enforce} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t, mode)
			f.opts.BudgetRecords = 20
			f.start()
			f.idle()
			var b strings.Builder
			for i := range 600 {
				fmt.Fprintln(&b, envelopeFor(f.nextRID(), "observe", fmt.Sprintf("toolu_noise_%d", i), "echo noise token=ghp_"+strings.Repeat("a", 36)))
			}
			f.appendRaw(b.String())
			f.waitRecords(21)
			rid := f.nextRID()
			f.appendRaw(envelopeFor(rid, "observe", "toolu_bad", "rm -rf ~") + "\n")
			var bad telemetry.Record
			cbtest.WaitForf(t, func() bool {
				for _, r := range f.records() {
					if r.RID == rid {
						bad = r
						return true
					}
				}
				return false
			}, func() string {
				return fmt.Sprintf("the dangerous call has no record of its own; %d records", len(f.records()))
			})
			if bad.Decision != claudehook.Deny || !strings.Contains(string(bad.Input), "rm -rf") || strings.Contains(bad.Reason, "logged late") {
				t.Errorf("the dangerous call's record: %+v", bad)
			}
			f.later(flood.Span)
			f.appendRaw(envelopeFor(f.nextRID(), "observe", "toolu_after", "ls") + "\n")
			var sum telemetry.Record
			cbtest.WaitForf(t, func() bool {
				for _, r := range f.records() {
					if r.Rule == ruleid.Flood && strings.Contains(r.Reason, "were not logged line by line") {
						sum = r
						return true
					}
				}
				return false
			}, func() string { return "no summary of the minute" })
			var folded struct {
				Events int            `json:"events"`
				Rules  map[string]int `json:"rules"`
				First  struct {
					Input json.RawMessage `json:"input"`
				} `json:"first"`
			}
			if err := json.Unmarshal(sum.Input, &folded); err != nil || folded.Events < 500 || len(folded.Rules) == 0 {
				t.Fatalf("summary input %s (%v)", sum.Input, err)
			}
			if !strings.Contains(string(folded.First.Input), "echo noise") || strings.Contains(string(sum.Input), "ghp_aaaa") {
				t.Errorf("the quoted inputs are missing or not redacted: %s", sum.Input)
			}
		})
	}
}
