package classifier

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// RuleInfo describes one rule of a policy as an admin reads it.
type RuleInfo struct {
	ID string `json:"id"`
	// Verdict is what the rule decides when it matches: deny (a block rule) or ask.
	Verdict claudehook.Decision `json:"verdict"`
	Target  Target              `json:"target"`
	// Mode is "disabled" (policy.disabled_rules), "observe" or "enforce" (policy.rule_modes), or
	// "" when the rule follows managed.json's mode.
	Mode string `json:"mode,omitempty"`
	// Matches says what the rule matches, one line per pattern, list or validator.
	Matches []string `json:"matches"`
	Unless  []string `json:"unless,omitempty"`
	Nudge   string   `json:"nudge,omitempty"`
	Doc     string   `json:"doc,omitempty"`
	File    string   `json:"file"`
	Line    int      `json:"line"`
}

// Mode values of a RuleInfo beyond those of policy.rule_modes.
const ModeDisabled = "disabled"

// Catalog lists every rule of the policy in the order they are matched, those switched off
// included. A deny-all policy (an invalid enforce configuration) has none.
func (c *Classifier) Catalog() []RuleInfo {
	disabled := map[string]bool{}
	for _, id := range c.policy.DisabledRules {
		disabled[id] = true
	}
	var out []RuleInfo
	for _, r := range c.all {
		ri := RuleInfo{ID: r.ID, Verdict: claudehook.Ask, Target: r.Target, Mode: c.modes[r.ID],
			Nudge: r.Nudge, Doc: r.Doc(), File: r.File, Line: r.Line}
		if r.Action == Block {
			ri.Verdict = claudehook.Deny
		}
		if disabled[r.ID] {
			ri.Mode = ModeDisabled
		}
		for _, re := range r.Patterns {
			ri.Matches = append(ri.Matches, "pattern "+re.String())
		}
		if r.NotInList != "" {
			ri.Matches = append(ri.Matches, "a program not in "+r.NotInList)
		}
		if r.Validator != "" {
			ri.Matches = append(ri.Matches, "validator "+r.Validator)
		}
		for _, re := range r.Unless {
			ri.Unless = append(ri.Unless, re.String())
		}
		if r.UnlessOrdinary {
			ri.Unless = append(ri.Unless, "content that is an ordinary configuration of its kind")
		}
		out = append(out, ri)
	}
	return out
}

// RuleIDs lists the id of every rule of the policy, those switched off included: cheaper than
// Catalog where only the names matter (the host hook compiles a policy on every call).
func (c *Classifier) RuleIDs() []string {
	ids := make([]string, len(c.all))
	for i, r := range c.all {
		ids[i] = r.ID
	}
	return ids
}

// Fingerprint identifies what the policy decides with: every rule file (built-in and the
// admin's, by name and content), the rules switched off, the rule modes and the allow lists.
// Two classifiers with the same fingerprint judge every call alike, whichever managed.json
// they came from; a rule file changed under the same managed.json changes it.
func (c *Classifier) Fingerprint() string {
	h := sha256.New()
	if c.denyAll != "" {
		fmt.Fprintf(h, "deny-all\x00%s\x00", c.denyAll)
	}
	for _, f := range c.files {
		fmt.Fprintf(h, "file\x00%s\x00%d\x00", f.name, len(f.text))
		io.WriteString(h, f.text)
	}
	p := c.policy
	fmt.Fprintf(h, "disabled\x00%s\x00", strings.Join(slices.Sorted(slices.Values(p.DisabledRules)), ","))
	for _, id := range slices.Sorted(maps.Keys(p.RuleModes)) {
		fmt.Fprintf(h, "mode\x00%s=%s\x00", id, p.RuleModes[id])
	}
	fmt.Fprintf(h, "exec\x00%s\x00", strings.Join(slices.Sorted(slices.Values(p.AllowedExecutables)), ","))
	fmt.Fprintf(h, "agents\x00%s\x00", strings.Join(slices.Sorted(slices.Values(p.AllowedAgents)), ","))
	fmt.Fprintf(h, "mcp\x00%t\x00%s\x00", p.RestrictMCPServers, strings.Join(slices.Sorted(slices.Values(p.AllowedMCPServers)), ","))
	return hex.EncodeToString(h.Sum(nil))[:16]
}
