package collector

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// RuleFlood is the rule of the records that summarise a session's events over its budget.
const RuleFlood = "coworkbridge.flood"

const budgetWindow = time.Minute

// budget is one session's use of the decision log in the current window.
type budget struct {
	start             time.Time
	records           int
	bytes             int64
	suppressed        int
	suppressedBytes   int64
	suppressedDecided map[claudehook.Decision]int // by decision, for the summary
}

// admit splits outcomes into those logged line by line and the summary records the budget calls
// for: one when a window's budget is first exceeded, one with the counts when that window closes.
// It reports whether the budget was exceeded just now.
func (c *Collector) admit(t *tracked, p *policy, outs []outcome, now time.Time) (keep []outcome, summaries []telemetry.Record, exceeded bool) {
	b := &t.budget
	for _, o := range outs {
		if now.Sub(b.start) >= budgetWindow {
			if b.suppressed > 0 {
				summaries = append(summaries, c.floodRecord(t, p, now, fmt.Sprintf(
					"%d events (%d bytes of input) from this session in the minute from %s were not logged line by line: over the per-session budget of %d records and %d bytes a minute (decisions: %v)",
					b.suppressed, b.suppressedBytes, b.start.UTC().Format(time.RFC3339), c.opts.BudgetRecords, c.opts.BudgetBytes, b.suppressedDecided)))
			}
			*b = budget{start: now}
		}
		size := int64(len(o.rec.Input))
		if o.backlog {
			keep = append(keep, o)
			continue
		}
		if b.records < c.opts.BudgetRecords && b.bytes+size <= c.opts.BudgetBytes {
			b.records++
			b.bytes += size
			keep = append(keep, o)
			continue
		}
		if b.suppressed == 0 {
			exceeded = true
			summaries = append(summaries, c.floodRecord(t, p, now, fmt.Sprintf(
				"this session exceeded its decision-log budget (%d records or %d bytes a minute); its further events this minute are counted, not logged", c.opts.BudgetRecords, c.opts.BudgetBytes)))
			b.suppressedDecided = map[claudehook.Decision]int{}
		}
		b.suppressed++
		b.suppressedBytes += size
		b.suppressedDecided[o.rec.Decision]++
	}
	return keep, summaries, exceeded
}

func (c *Collector) floodRecord(t *tracked, p *policy, now time.Time, reason string) telemetry.Record {
	return telemetry.Record{TS: now, Session: t.id, Agent: "cowork", Transport: telemetry.TransportSpool, Mode: string(p.cfg.Mode),
		Input: json.RawMessage("null"), Decision: claudehook.Deny, Rule: RuleFlood, Reason: reason}
}

// floodQuarantine quarantines a session that went over its budget, in enforce: no agent's work
// needs it, and a session flooding the log may be hiding calls among the noise.
func (c *Collector) floodQuarantine(t *tracked, p *policy) {
	c.log.Warn("a session exceeded its decision-log budget; the excess is summarised", "code", health.CodeSessionFlooding, "session", t.id,
		"records_per_minute", c.opts.BudgetRecords, "bytes_per_minute", c.opts.BudgetBytes)
	if p.cfg.Mode == managedconfig.Enforce {
		c.Quarantine(t.id, "it sent more events than any agent's work needs (over the decision-log budget)")
	}
}
