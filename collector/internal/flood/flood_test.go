package flood

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var start = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func routine(size int64) Entry {
	return Entry{Size: size, Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
}

func TestAWindowLogsItsBudgetThenCountsAndSummarisesWhenItCloses(t *testing.T) {
	var w Window
	lim := Limits{Records: 3, Bytes: 1 << 20, Notable: 10, NotableBytes: 1 << 20}
	var logged, exceeded int
	for i := range 5 {
		e := routine(10)
		e.Rule = "bash.x"
		e.Input = json.RawMessage(`{"command":"echo ` + string(rune('a'+i)) + `"}`)
		a := w.Admit(start.Add(time.Duration(i)*time.Second), e, lim)
		if a.Log {
			logged++
		}
		if a.Exceeded {
			exceeded++
			if len(a.Summaries) != 1 || !strings.Contains(a.Summaries[0].Text, "exceeded its decision-log budget") || a.Summaries[0].Folded != nil {
				t.Errorf("crossing the budget: summaries %+v", a.Summaries)
			}
		}
	}
	if logged != 3 || exceeded != 1 {
		t.Fatalf("logged %d, exceeded %d times; want 3 and once", logged, exceeded)
	}
	if a := w.Admit(start.Add(10*time.Second), Entry{Size: 10, Backlog: true}, lim); !a.Log {
		t.Error("a backlog record was held to the budget")
	}
	a := w.Admit(start.Add(Span), routine(10), lim)
	if !a.Log || len(a.Summaries) != 1 {
		t.Fatalf("the next minute: %+v", a)
	}
	s := a.Summaries[0]
	if !strings.Contains(s.Text, "2 events (20 bytes of input, 0 of them notable)") || !strings.Contains(s.Text, "bash.x:2") {
		t.Errorf("summary %q", s.Text)
	}
	f := s.Folded
	if f == nil || f.Events != 2 || f.Rules["bash.x"] != 2 || string(f.First.Input) != `{"command":"echo d"}` || string(f.Last.Input) != `{"command":"echo e"}` {
		t.Fatalf("folded %+v", f)
	}
	data, err := json.Marshal(f)
	if err != nil || !strings.Contains(string(data), `"first":{"tool":"Bash","input":{"command":"echo d"}}`) || !strings.Contains(string(data), `"rules":{"bash.x":2}`) {
		t.Errorf("folded as JSON: %s (%v)", data, err)
	}
}

func TestWhatMattersIsLoggedPastTheBudgetWithinItsOwnAllowance(t *testing.T) {
	var w Window
	lim := Limits{Records: 2, Bytes: 1 << 20, Notable: 3, NotableBytes: 1 << 20}
	for range 2 {
		w.Admit(start, routine(1), lim)
	}
	if a := w.Admit(start, routine(1), lim); a.Log || !a.Exceeded {
		t.Fatalf("a routine record past the budget: %+v", a)
	}
	deny := Entry{Size: 1, Rule: "bash.rm-critical", Notable: true, Tool: "Bash"}
	for i := range 3 {
		if a := w.Admit(start, deny, lim); !a.Log || a.Exceeded {
			t.Fatalf("notable record %d past the budget was not logged: %+v", i, a)
		}
	}
	if a := w.Admit(start, deny, lim); a.Log {
		t.Fatal("notable records past their own allowance were logged: a flood of forged denies would be unbounded")
	}
	a := w.Admit(start.Add(Span), routine(1), lim)
	if f := a.Summaries[0].Folded; f.Events != 2 || f.Notable != 1 || f.Rules["bash.rm-critical"] != 1 || f.Rules["(none)"] != 1 {
		t.Errorf("folded %+v", f)
	}
}

func TestTheFirstNotableRecordPastTheBudgetAlsoCrossesIt(t *testing.T) {
	var w Window
	lim := Limits{Records: 1, Bytes: 1 << 20, Notable: 5, NotableBytes: 1 << 20}
	w.Admit(start, routine(1), lim)
	a := w.Admit(start, Entry{Size: 1, Notable: true}, lim)
	if !a.Log || !a.Exceeded || len(a.Summaries) != 1 {
		t.Errorf("%+v", a)
	}
}

func TestASummaryCountsAtMostMaxRulesApart(t *testing.T) {
	var w Window
	lim := Limits{Records: 0, Bytes: 0}
	for i := range maxRules + 10 {
		w.Admit(start, Entry{Rule: "r" + string(rune('A'+i))}, lim)
	}
	a := w.Admit(start.Add(Span), Entry{}, lim)
	f := a.Summaries[0].Folded
	if len(f.Rules) != maxRules+1 || f.Rules["(other)"] != 10 {
		t.Errorf("%d rules, (other) %d", len(f.Rules), f.Rules["(other)"])
	}
}

func TestABudgetOfBytesCountsAsWellAsRecords(t *testing.T) {
	var w Window
	lim := Limits{Records: 100, Bytes: 1000}
	if a := w.Admit(start, routine(600), lim); !a.Log {
		t.Fatal("the first record, within both budgets, was not logged")
	}
	if a := w.Admit(start, routine(600), lim); a.Log || !a.Exceeded {
		t.Errorf("a record over the bytes budget: %+v", a)
	}
}

func TestACloneIsWhatTheWindowWasBeforeAFailedWrite(t *testing.T) {
	var w Window
	lim := Limits{Records: 1, Bytes: 1 << 20}
	w.Admit(start, routine(1), lim)
	w.Admit(start, Entry{Rule: "x"}, lim) // folded
	saved := w.Clone()
	w.Admit(start, Entry{Rule: "x"}, lim)
	w = saved
	if w.folded.Events != 1 || w.folded.Rules["x"] != 1 {
		t.Errorf("after going back: %+v", w.folded)
	}
}

func TestQuotesAreRedactedByTheCaller(t *testing.T) {
	f := Folded{First: Quoted{Input: json.RawMessage(`"secret"`)}, Last: Quoted{Input: json.RawMessage(`"secret2"`)}}
	f.Quotes(func(json.RawMessage) json.RawMessage { return json.RawMessage(`"[redacted]"`) })
	if string(f.First.Input) != `"[redacted]"` || string(f.Last.Input) != `"[redacted]"` {
		t.Errorf("%+v", f)
	}
}
