package lane

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
func (l *Lane) scanInstructions(s *session.Session, p *Policy) {
	res := l.instr.Look(s, p.Rules)
	l.stirred = l.stirred || res.Moved
	l.env.Health.InstructionFiles(l.id, res.Scanned)
	if res.Changed {
		for _, name := range res.New {
			l.env.Log.Warn("an instruction file in the session holds text an agent would obey", "code", health.CodeInstructionFound,
				"session", l.id, "file", name, "rules", strings.Join(res.Findings[name], ","))
		}
		l.env.Health.InstructionFindings(l.id, res.Findings)
	}
	if len(res.Blocked) > 0 && p.Cfg.Mode == managedconfig.Enforce && p.Cfg.Policy.QuarantineOnInjection && l.quarantined() == "" {
		l.Quarantine(fmt.Sprintf("the instruction file %s holds text a block rule forbids (%s)", res.Blocked[0], strings.Join(l.instr.Rules(res.Blocked[0]), ", ")))
	}
}
