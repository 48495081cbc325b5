package flood

import (
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

func TestAWindowLogsItsBudgetThenCountsAndSummarisesWhenItCloses(t *testing.T) {
	var w Window
	lim := Limits{Records: 3, Bytes: 1 << 20}
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var logged, exceeded int
	for i := range 5 {
		a := w.Admit(start.Add(time.Duration(i)*time.Second), 10, claudehook.Deny, false, lim)
		if a.Log {
			logged++
		}
		if a.Exceeded {
			exceeded++
			if len(a.Summaries) != 1 || !strings.Contains(a.Summaries[0], "exceeded its decision-log budget") {
				t.Errorf("crossing the budget: summaries %q", a.Summaries)
			}
		}
	}
	if logged != 3 || exceeded != 1 {
		t.Fatalf("logged %d, exceeded %d times; want 3 and once", logged, exceeded)
	}
	if a := w.Admit(start.Add(10*time.Second), 10, claudehook.Allow, true, lim); !a.Log {
		t.Error("a backlog record was held to the budget")
	}
	a := w.Admit(start.Add(Span), 10, claudehook.Allow, false, lim)
	if !a.Log || len(a.Summaries) != 1 || !strings.Contains(a.Summaries[0], "2 events (20 bytes of input)") || !strings.Contains(a.Summaries[0], "deny:2") {
		t.Errorf("the next minute: %+v", a)
	}
}

func TestABudgetOfBytesCountsAsWellAsRecords(t *testing.T) {
	var w Window
	now := time.Now()
	if a := w.Admit(now, 600, claudehook.Allow, false, Limits{Records: 100, Bytes: 1000}); !a.Log {
		t.Fatal("the first record, within both budgets, was not logged")
	}
	if a := w.Admit(now, 600, claudehook.Allow, false, Limits{Records: 100, Bytes: 1000}); a.Log || !a.Exceeded {
		t.Errorf("a record over the bytes budget: %+v", a)
	}
}

func TestACloneIsWhatTheWindowWasBeforeAFailedWrite(t *testing.T) {
	var w Window
	now := time.Now()
	lim := Limits{Records: 1, Bytes: 1 << 20}
	w.Admit(now, 1, claudehook.Allow, false, lim)
	w.Admit(now, 1, claudehook.Deny, false, lim) // suppressed
	saved := w.Clone()
	w.Admit(now, 1, claudehook.Deny, false, lim)
	w = saved
	if w.suppressed != 1 || w.decided[claudehook.Deny] != 1 {
		t.Errorf("after going back: %d suppressed, %v", w.suppressed, w.decided)
	}
}
