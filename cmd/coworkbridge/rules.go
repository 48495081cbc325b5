package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/spelling"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

// targetText says what a rule of each target is matched against, for admins.
func targetText(t classifier.Target) string {
	switch t {
	case classifier.TargetBash:
		return "shell commands: each simple command (wrappers looked through) and the whole line"
	case classifier.TargetEdit:
		return "paths a call writes (Write, Edit, NotebookEdit, shell redirections)"
	case classifier.TargetRead:
		return "paths a call reads (Read, Glob, Grep, files shell readers open)"
	case classifier.TargetContent:
		return "the text a call writes"
	case classifier.TargetMCP:
		return "connector calls: \"<server> <tool> <arguments>\""
	case classifier.TargetEffect:
		return "the effects of a shell command, one line each (see check's effects)"
	case classifier.TargetURL:
		return "URLs a call fetches or names"
	}
	return string(t)
}

// ruleView is one rule as rules shows it: the catalog's entry with the mode it runs in under
// this configuration and what a blocked user is told.
type ruleView struct {
	classifier.RuleInfo
	Effective string `json:"effective_mode"`
	Notice    string `json:"notice,omitempty"`
}

func viewOf(r classifier.RuleInfo, u policy.InUse) ruleView {
	v := ruleView{RuleInfo: r, Effective: r.Mode}
	switch {
	case r.Mode == "":
		v.Effective = string(u.Mode) + " (managed.json's mode)"
	case r.Mode != classifier.ModeDisabled:
		v.Effective = r.Mode + " (policy.rule_modes)"
	default:
		v.Effective = "disabled (policy.disabled_rules)"
	}
	v.Notice = u.Policy.Notices.For(r.ID).String()
	return v
}

func cmdRules(_ context.Context, args []string, sio stdio) int {
	fs := newFlags("rules", "[--config FILE] [--json] [RULE-ID]",
		"Lists every rule of the policy in force (managed.json's, or the last good copy the daemon runs on):\n"+
			"its id, verdict, the mode it runs in, and the file and line it comes from; with RULE-ID, explains\n"+
			"that rule (what it matches, its exceptions, what the agent and the user are told). Exit status 0;\n"+
			"1 on error or a rule the policy does not have; 64 usage.", sio)
	config := fs.String("config", "", "list the rules of this candidate managed.json instead of the one in force")
	asJSON := fs.Bool("json", false, "print JSON: the configuration and its rules, or the one rule")
	if code, done := fs.parse(args); done {
		return code
	}
	if fs.NArg() > 1 {
		return fs.usageError("rules explains one rule at a time, got %d", fs.NArg())
	}
	u, err := policyOf(*config)
	if err != nil {
		fmt.Fprintln(sio.err, "coworkbridge rules:", err)
		return exitFail
	}
	if u.Note != "" {
		fmt.Fprintln(sio.err, "coworkbridge rules:", u.Note)
	}
	var views []ruleView
	for _, r := range u.Classifier.Catalog() {
		views = append(views, viewOf(r, u))
	}
	if id := fs.Arg(0); id != "" {
		i := slices.IndexFunc(views, func(v ruleView) bool { return v.ID == id })
		if i < 0 {
			fmt.Fprintln(sio.err, "coworkbridge rules:", unknownRule(id, views))
			return exitFail
		}
		if *asJSON {
			json.NewEncoder(sio.out).Encode(views[i])
			return exitOK
		}
		explainRule(sio.out, views[i], u)
		return exitOK
	}
	if *asJSON {
		json.NewEncoder(sio.out).Encode(map[string]any{"config": u.Path, "config_hash": u.Hash, "config_origin": u.Origin,
			"fingerprint": u.Classifier.Fingerprint(), "mode": u.Mode, "enabled": u.Enabled, "rules": views})
		return exitOK
	}
	listRules(sio.out, views, u)
	return exitOK
}

func unknownRule(id string, views []ruleView) string {
	ids := make([]string, len(views))
	for i, v := range views {
		ids[i] = v.ID
	}
	msg := fmt.Sprintf("no rule %q in this policy", id)
	if near, ok := spelling.Suggest(id, ids); ok {
		return msg + fmt.Sprintf("; did you mean %q?", near)
	}
	return msg + " ('coworkbridge rules' lists them)"
}

func listRules(w io.Writer, views []ruleView, u policy.InUse) {
	fmt.Fprintf(w, "policy: %s, rules fingerprint %s\n", policySource(u), u.Classifier.Fingerprint())
	if !u.Enabled {
		fmt.Fprintln(w, "coworkbridge is off under this configuration (cowork_enabled is not true): these rules judge nothing until it is switched on.")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tVERDICT\tMODE\tSOURCE")
	var deny, ask, off, observe int
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s:%d\n", v.ID, v.Verdict, strings.Fields(v.Effective)[0], v.File, v.Line)
		switch {
		case v.Mode == classifier.ModeDisabled:
			off++
		case v.Verdict == claudehook.Deny:
			deny++
		default:
			ask++
		}
		if v.Mode == string(managedconfig.Observe) || (v.Mode == "" && u.Mode == managedconfig.Observe) {
			observe++
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d rules: %d deny, %d ask, %d disabled; %d only observed. 'coworkbridge rules ID' explains one.\n",
		len(views), deny, ask, off, observe)
}

func explainRule(w io.Writer, v ruleView, u policy.InUse) {
	verdict := "ask (a suspicious rule: the user is asked)"
	if v.Verdict == claudehook.Deny {
		verdict = "deny (a block rule)"
	}
	line := func(label, text string) {
		if text != "" {
			fmt.Fprintf(w, "%-9s %s\n", label+":", text)
		}
	}
	line("rule", v.ID)
	line("verdict", verdict)
	line("mode", v.Effective)
	line("target", targetText(v.Target))
	line("source", fmt.Sprintf("%s:%d", v.File, v.Line))
	line("about", v.Doc)
	for _, m := range v.Matches {
		line("matches", m)
	}
	for _, m := range v.Unless {
		line("unless", m)
	}
	line("nudge", v.Nudge)
	line("notice", v.Notice)
	line("policy", policySource(u))
}
