package collector

import (
	"fmt"
	"strings"

	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// scanInstructions looks at the session's instruction files (internal/instructions) and acts on
// what they hold now: a warning naming file and rules when the findings change, and in enforce
// mode with policy.quarantine_on_injection, a quarantine while a block rule's text stays. The
// files themselves are never changed.
func (c *Collector) scanInstructions(s *session.Session, t *tracked, p *policy) {
	res := t.instr.Look(s, p.cls)
	c.opts.Health.InstructionFiles(t.id, res.Scanned)
	if res.Changed {
		for _, name := range res.New {
			c.log.Warn("an instruction file in the session holds text an agent would obey", "code", health.CodeInstructionFound,
				"session", t.id, "file", name, "rules", strings.Join(res.Findings[name], ","))
		}
		c.opts.Health.InstructionFindings(t.id, res.Findings)
	}
	if len(res.Blocked) > 0 && p.cfg.Mode == managedconfig.Enforce && p.cfg.Policy.QuarantineOnInjection && c.quarantine(t) == "" {
		c.Quarantine(t.id, fmt.Sprintf("the instruction file %s holds text a block rule forbids (%s)", res.Blocked[0], strings.Join(t.instr.Rules(res.Blocked[0]), ", ")))
	}
}
