package classifier

import (
	"slices"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// InstructionFindings judges text found in an instruction or memory file by the content rules,
// whatever wrote it: every rule that matches, strictest first. The daemon's load-time scan uses
// it on files that changed by routes no tool call showed (a connector, an editor, a sync).
func (c *Classifier) InstructionFindings(text string) []Verdict {
	if c.denyAll != "" || text == "" {
		return nil
	}
	it := item{target: TargetContent, text: text}
	var out []Verdict
	for _, r := range c.rules[TargetContent] {
		matched, ok := c.ruleMatches(r, it)
		if !ok {
			continue
		}
		v := Verdict{Decision: decisionOf(r), RuleID: r.ID, Matched: matched, ObserveOnly: c.modes[r.ID] == "observe"}
		v.Reason = "coworkbridge rule " + r.ID + ": " + describeMatch(it, matched)
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b Verdict) int { return severity(b) - severity(a) })
	return out
}

// InstructionFile reports whether a path (relative to a session, or absolute) names a file
// agents read as instructions or memory.
func InstructionFile(p string) bool { return instructionFile(p) }

// decisionOf is what a rule's match decides: a block denies, a suspicious rule asks.
func decisionOf(r *Rule) claudehook.Decision {
	if r.Action == Suspicious {
		return claudehook.Ask
	}
	return claudehook.Deny
}
