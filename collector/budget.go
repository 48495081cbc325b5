package collector

import (
	"encoding/json"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/collector/internal/flood"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// RuleFlood is the rule of the records that summarise a session's events over its budget.
const RuleFlood = "coworkbridge.flood"

// admit splits outcomes into those logged line by line and the summary records the session's
// budget calls for (see flood.Window). It reports whether the budget was exceeded just now.
func (c *Collector) admit(t *tracked, p *policy, outs []outcome, now time.Time) (keep []outcome, summaries []telemetry.Record, exceeded bool) {
	lim := flood.Limits{Records: c.opts.BudgetRecords, Bytes: c.opts.BudgetBytes}
	for _, o := range outs {
		a := t.flood.Admit(now, int64(len(o.rec.Input)), o.rec.Decision, o.backlog, lim)
		for _, s := range a.Summaries {
			summaries = append(summaries, c.floodRecord(t, p, now, s))
		}
		exceeded = exceeded || a.Exceeded
		if a.Log {
			keep = append(keep, o)
		}
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
