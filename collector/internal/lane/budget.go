package lane

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/collector/internal/flood"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/judgement"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
	"github.com/coworkbridge/coworkbridge/transcript"
)

// admit splits outcomes into those logged line by line and the summary records the session's
// budget calls for (see flood.Window). It reports whether the budget was exceeded just now.
// What the budget leaves out and names a tool call is held (see hold): a real call among forged
// noise is logged line by line once a transcript shows it.
func (l *Lane) admit(p *Policy, outs []outcome, now time.Time) (keep []outcome, summaries []telemetry.Record, exceeded bool) {
	lim := flood.Limits{Records: l.env.Limits.BudgetRecords, Bytes: l.env.Limits.BudgetBytes,
		Notable: notableShare * l.env.Limits.BudgetRecords, NotableBytes: notableShare * l.env.Limits.BudgetBytes}
	for _, o := range outs {
		a := l.flood.Admit(now, flood.Entry{Size: int64(len(o.rec.Input)), Rule: o.rec.Rule, Notable: o.notable,
			Backlog: o.backlog, Tool: o.rec.Tool, Input: o.rec.Input}, lim)
		for _, s := range a.Summaries {
			summaries = append(summaries, l.floodRecord(p, now, s))
		}
		exceeded = exceeded || a.Exceeded
		if a.Log {
			keep = append(keep, o)
		} else {
			l.overflow.hold(o)
		}
	}
	return keep, summaries, exceeded
}

// notableShare is how many times the routine budget a session may log, a minute, of the records
// that matter as evidence once past that budget: a flood of forged denies stays bounded, and
// past this the records are held as the routine ones are (logged when a transcript shows them).
const notableShare = 4

// maxHeld bounds the records held per session (the newest are kept), and each keeps a preview of
// its input only: about 330 KiB at most. To push a real call out, forged lines must outnumber it
// by maxHeld in the half second before the CLI writes the call, and each of them is then a
// forged-event finding of its own.
const maxHeld = 256

// heldRecords are records the budget left out that name a tool call, by its id, until a
// transcript shows the call (then they are logged, late) or ForgedAfter passes (then the call
// was forged, and the ledger reports it). They belong to the session's worker.
type heldRecords map[string]telemetry.Record

func (h *heldRecords) hold(o outcome) {
	if o.toolUseID == "" || len(o.toolUseID) > 128 {
		return
	}
	if *h == nil {
		*h = heldRecords{}
	}
	if len(*h) >= maxHeld {
		delete(*h, h.oldest())
	}
	r := o.rec
	r.Input = transcript.Preview(telemetry.RedactedInput(r.Input)) // kept in state: never more than the log
	(*h)[o.toolUseID] = r
}

func (h heldRecords) oldest() string {
	var id string
	var at time.Time
	for k, r := range h {
		if id == "" || r.TS.Before(at) {
			id, at = k, r.TS
		}
	}
	return id
}

// confirm returns the held record of a call a transcript shows, and forgets it.
func (h heldRecords) confirm(id string) (telemetry.Record, bool) {
	r, ok := h[id]
	if ok {
		delete(h, id)
		r.Reason = strings.TrimSpace(r.Reason + " (logged late: the session was over its decision-log budget, and its transcript shows this call)")
	}
	return r, ok
}

// expire forgets the records held longer than after.
func (h heldRecords) expire(now time.Time, after time.Duration) {
	for id, r := range h {
		if now.Sub(r.TS) > after {
			delete(h, id)
		}
	}
}

// footprint is what the held records keep in memory, in bytes.
func (h heldRecords) footprint() int64 {
	n := int64(0)
	for id, r := range h {
		n += int64(len(id)+len(r.Input)+len(r.Reason)+len(r.Tool)+len(r.Cwd)) + 256
	}
	return n
}

func (l *Lane) floodRecord(p *Policy, now time.Time, s flood.Summary) telemetry.Record {
	var detail json.RawMessage
	if s.Folded != nil {
		f := *s.Folded
		f.Quotes(func(in json.RawMessage) json.RawMessage { return transcript.Preview(telemetry.RedactedInput(in)) })
		detail, _ = json.Marshal(f)
	}
	return judgement.Flood(now, l.id, p.Cfg.Mode, s.Text, detail)
}

// floodQuarantine quarantines a session that went over its budget, in enforce: no agent's work
// needs it, and a session flooding the log may be hiding calls among the noise.
func (l *Lane) floodQuarantine(p *Policy) {
	l.env.Log.Warn("a session exceeded its decision-log budget; the excess is summarised", "code", health.CodeSessionFlooding, "session", l.id,
		"records_per_minute", l.env.Limits.BudgetRecords, "bytes_per_minute", l.env.Limits.BudgetBytes)
	if p.Cfg.Mode == managedconfig.Enforce {
		l.Quarantine("it sent more events than any agent's work needs (over the decision-log budget)")
	}
}
