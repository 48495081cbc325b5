// Package flood is one session's budget of the decision log: how many records, and how many bytes
// of input, it may have logged line by line in a minute. Past the budget its events are counted,
// not logged, and summarised when the minute closes, so that one session cannot push the others'
// records out of the log, nor hide a call among its noise.
//
// It decides only what is logged; the events themselves are judged and answered whatever it
// says. Its state is reachable only through its methods: a Window belongs to its session's worker.
package flood

import (
	"fmt"
	"maps"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// Span is the length of a budget window.
const Span = time.Minute

// Limits are a session's budget for one window.
type Limits struct {
	Records int
	Bytes   int64
}

// Window is one session's use of the decision log in the current minute.
type Window struct {
	start           time.Time
	records         int
	bytes           int64
	suppressed      int
	suppressedBytes int64
	decided         map[claudehook.Decision]int // by decision, for the summary
}

// Admission is what the budget says of one record.
type Admission struct {
	// Log: write it line by line.
	Log bool
	// Summaries are the summary texts to log now: the close of the window before, when it had
	// records it did not log; the crossing of the budget, the first time in a window.
	Summaries []string
	// Exceeded: this record crossed the budget.
	Exceeded bool
}

// Admit decides one record of size bytes of input with decision. A backlog record (events that
// piled up while the daemon was down) is logged whatever the budget.
func (w *Window) Admit(now time.Time, size int64, decision claudehook.Decision, backlog bool, lim Limits) Admission {
	var a Admission
	if now.Sub(w.start) >= Span {
		if w.suppressed > 0 {
			a.Summaries = append(a.Summaries, fmt.Sprintf(
				"%d events (%d bytes of input) from this session in the minute from %s were not logged line by line: over the per-session budget of %d records and %d bytes a minute (decisions: %v)",
				w.suppressed, w.suppressedBytes, w.start.UTC().Format(time.RFC3339), lim.Records, lim.Bytes, w.decided))
		}
		*w = Window{start: now}
	}
	switch {
	case backlog:
		a.Log = true
	case w.records < lim.Records && w.bytes+size <= lim.Bytes:
		w.records++
		w.bytes += size
		a.Log = true
	default:
		if w.suppressed == 0 {
			a.Exceeded = true
			a.Summaries = append(a.Summaries, fmt.Sprintf(
				"this session exceeded its decision-log budget (%d records or %d bytes a minute); its further events this minute are counted, not logged", lim.Records, lim.Bytes))
			w.decided = map[claudehook.Decision]int{}
		}
		w.suppressed++
		w.suppressedBytes += size
		w.decided[decision]++
	}
	return a
}

// Clone is a copy to go back to when the records admitted could not be written: the retry
// counts them again.
func (w *Window) Clone() Window {
	c := *w
	c.decided = maps.Clone(w.decided)
	return c
}
