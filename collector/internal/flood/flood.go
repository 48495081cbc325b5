// Package flood is one session's budget of the decision log: how many records, and how many bytes
// of input, it may have logged line by line in a minute. Past the budget its routine events are
// counted, not logged, and summarised when the minute closes, so that one session cannot push the
// others' records out of the log. What matters as evidence (a call the rules would refuse or ask
// about, a step of a flow, a call that could not be judged) is logged line by line past the
// budget, within a second, larger allowance of its own, so that a flood never hides a dangerous
// call among its noise.
//
// It decides only what is logged; the events themselves are judged and answered whatever it
// says, and it does not read inputs: the caller hands it the redacted preview a summary quotes.
// Its state is reachable only through its methods: a Window belongs to its session's worker.
package flood

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// Span is the length of a budget window.
const Span = time.Minute

// Limits are a session's budget for one window: Records and Bytes for its routine records,
// Notable and NotableBytes for what matters beyond them.
type Limits struct {
	Records      int
	Bytes        int64
	Notable      int
	NotableBytes int64
}

// Entry is what the budget is told of one record.
type Entry struct {
	// Size is the bytes of its input.
	Size int64
	// Rule is the rule it names ("" for an allow no rule matched).
	Rule string
	// Notable: the record matters as evidence (judgement.Outcome.Notable).
	Notable bool
	// Backlog: the event piled up while the daemon was down; caught up whatever the budget.
	Backlog bool
	// Tool and Input are what a summary quotes of it, as the record has them: the caller
	// redacts and cuts the quotes before they are written (Folded.Quotes).
	Tool  string
	Input json.RawMessage
}

// Window is one session's use of the decision log in the current minute.
type Window struct {
	start               time.Time
	records, notable    int
	bytes, notableBytes int64
	folded              *Folded
}

// Folded is what a summary says of the records a window did not log line by line.
type Folded struct {
	Events int   `json:"events"`
	Bytes  int64 `json:"bytes"`
	// Notable counts those that mattered, folded only past the allowance for them.
	Notable int `json:"notable,omitempty"`
	// Rules counts them by rule ("" as "(none)"), at most maxRules of them; the rest under "(other)".
	Rules       map[string]int `json:"rules"`
	First, Last Quoted         `json:"-"`
	From        time.Time      `json:"from"`
}

// Quotes applies fn (the caller's redaction) to the inputs quoted, before they are written.
func (f *Folded) Quotes(fn func(json.RawMessage) json.RawMessage) {
	for _, q := range []*Quoted{&f.First, &f.Last} {
		if len(q.Input) > 0 {
			q.Input = fn(q.Input)
		}
	}
}

// Quoted is one folded record as a summary quotes it.
type Quoted struct {
	Tool  string          `json:"tool,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// MarshalJSON writes the quotes beside the counts.
func (f Folded) MarshalJSON() ([]byte, error) {
	type plain Folded
	return json.Marshal(struct {
		plain
		First Quoted `json:"first"`
		Last  Quoted `json:"last"`
	}{plain(f), f.First, f.Last})
}

// maxRules bounds the rules a summary counts apart: the rule ids come from the policy, but a
// session decides which of them its events meet.
const maxRules = 32

// Summary is a summary record to log now.
type Summary struct {
	Text string
	// Folded is what the window folded, for the record's input; nil for the crossing's notice.
	Folded *Folded
}

// Admission is what the budget says of one record.
type Admission struct {
	// Log: write it line by line.
	Log bool
	// Summaries are the summaries to log now: the close of the window before, when it folded
	// records; the crossing of the budget, the first time in a window.
	Summaries []Summary
	// Exceeded: this record crossed the budget.
	Exceeded bool
}

// Admit decides one record.
func (w *Window) Admit(now time.Time, e Entry, lim Limits) Admission {
	var a Admission
	if now.Sub(w.start) >= Span {
		if f := w.folded; f != nil {
			a.Summaries = append(a.Summaries, Summary{Folded: f, Text: fmt.Sprintf(
				"%d events (%d bytes of input, %d of them notable) from this session in the minute from %s were not logged line by line: over the per-session budget of %d records and %d bytes a minute (by rule: %v; the first and last are quoted in the input)",
				f.Events, f.Bytes, f.Notable, f.From.UTC().Format(time.RFC3339), lim.Records, lim.Bytes, f.Rules)})
		}
		*w = Window{start: now}
	}
	switch {
	case e.Backlog:
		a.Log = true
	case w.records < lim.Records && w.bytes+e.Size <= lim.Bytes:
		w.records++
		w.bytes += e.Size
		a.Log = true
	case e.Notable && w.notable < lim.Notable && w.notableBytes+e.Size <= lim.NotableBytes:
		w.notable++
		w.notableBytes += e.Size
		a.Log = true
		a.Exceeded = w.cross(now, lim, &a)
	default:
		a.Exceeded = w.cross(now, lim, &a)
		w.fold(now, e)
	}
	return a
}

// cross notes the first record over the routine budget in this window.
func (w *Window) cross(now time.Time, lim Limits, a *Admission) bool {
	if w.folded != nil {
		return false
	}
	w.folded = &Folded{Rules: map[string]int{}, From: w.start}
	a.Summaries = append(a.Summaries, Summary{Text: fmt.Sprintf(
		"this session exceeded its decision-log budget (%d records or %d bytes a minute); its further routine events this minute are counted, not logged, while those the rules would refuse or ask about, and flow steps, are still logged one by one (up to %d a minute)",
		lim.Records, lim.Bytes, lim.Notable)})
	return true
}

func (w *Window) fold(now time.Time, e Entry) {
	f := w.folded
	f.Events++
	f.Bytes += e.Size
	if e.Notable {
		f.Notable++
	}
	rule := e.Rule
	if rule == "" {
		rule = "(none)"
	}
	if _, ok := f.Rules[rule]; !ok && len(f.Rules) >= maxRules {
		rule = "(other)"
	}
	f.Rules[rule]++
	q := Quoted{Tool: e.Tool, Input: e.Input}
	if f.Events == 1 {
		f.First = q
	}
	f.Last = q
}

// Clone is a copy to go back to when the records admitted could not be written: the retry
// counts them again.
func (w *Window) Clone() Window {
	c := *w
	if w.folded != nil {
		f := *w.folded
		f.Rules = maps.Clone(w.folded.Rules)
		c.folded = &f
	}
	return c
}
