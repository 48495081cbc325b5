package classifier

import (
	"context"
	"encoding/json"

	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/lazyregexp"
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

// Commands an instruction file tells agents to run are judged as the shell commands they are: an
// instruction to run what a Bash call would be refused is the same attack, deferred to a session
// that trusts the file. Only commands the text marks as such are read: fenced blocks, inline
// code, "$ " prompts, "run: …", and a download piped to a shell wherever it stands.
const (
	maxEmbeddedCommands = 16
	maxEmbeddedCommand  = 4 << 10
)

var (
	fencedBlock   = lazyregexp.New("(?s)```[ \\t]*(?:bash|sh|shell|zsh|console|terminal|command)?[ \\t]*\\n(.*?)```")
	inlineCode    = lazyregexp.New("`([^`\\n]{2,})`")
	promptLine    = lazyregexp.New(`(?m)^[ \t]*\$[ \t]+(.+)$`)
	runColonLine  = lazyregexp.New(`(?im)\b(?:run|execute)(?:[ \t]+(?:this|the following|the command))?[ \t]*:[ \t]*([^\x60\n]+)$`)
	fetchPipeLine = lazyregexp.New("(?i)\\b((?:curl|wget)\\s[^\\n`]*\\|\\s*(?:sudo\\s+)?(?:ba|z|da|k)?sh\\b(?:\\s+-[\\w-]+)*)")
	promptPrefix  = lazyregexp.New(`(?m)^[ \t]*\$[ \t]+`)
	embeddedForms = []*lazyregexp.Regexp{fencedBlock, inlineCode, promptLine, runColonLine, fetchPipeLine}
)

// prohibition is a line that forbids what follows it ("Never run `rm -rf ~`", "Do not use …
// | sh"), unless it only forbids forgetting or skipping it.
var (
	prohibition = lazyregexp.New(`(?i)\b(never|don'?t|do not|avoid|must not|mustn'?t|should not|shouldn'?t|not allowed|forbidden|prohibited|is dangerous|are dangerous)\b`)
	unforbidden = lazyregexp.New(`(?i)\b(never|don'?t|do not|must not|should not)\s+(forget|skip|fail|omit|hesitate|neglect)\b`)
)

// warnedAgainst reports whether the text before at, on its line (or the line above a fenced
// block), forbids the command at at: a file that warns agents off a command does not tell them
// to run it.
func warnedAgainst(text string, at int) bool {
	start := strings.LastIndexByte(text[:at], '\n') + 1
	before := text[start:at]
	if strings.HasPrefix(text[at:], "```") && start > 0 { // a block: the line that introduces it
		prev := strings.LastIndexByte(text[:start-1], '\n') + 1
		before = text[prev : start-1]
	}
	for _, end := range []string{". ", "! ", "? ", "; "} { // the sentence the command stands in
		if i := strings.LastIndex(before, end); i >= 0 {
			before = before[i+len(end):]
		}
	}
	return prohibition.MatchString(before) && !unforbidden.MatchString(before)
}

// embeddedCommands are the commands instruction text marks for running, at most
// maxEmbeddedCommands of them.
func embeddedCommands(text string) []string {
	var out []string
	for _, form := range embeddedForms {
		for _, m := range form.FindAllStringSubmatchIndex(text, maxEmbeddedCommands) {
			if warnedAgainst(text, m[0]) {
				continue
			}
			cmd := strings.TrimSpace(promptPrefix.ReplaceAllString(text[m[2]:m[3]], ""))
			if cmd == "" || len(cmd) > maxEmbeddedCommand || slices.ContainsFunc(out, func(o string) bool { return strings.Contains(o, cmd) }) {
				continue
			}
			if out = append(out, cmd); len(out) == maxEmbeddedCommands {
				return out
			}
		}
	}
	return out
}

// embeddedCommand finds a command in instruction text that a Bash call would be refused.
func embeddedCommand(c *Classifier, it item) (string, bool) {
	if it.target != TargetContent {
		return "", false
	}
	for _, cmd := range embeddedCommands(it.text) {
		input, _ := json.Marshal(map[string]string{"command": cmd})
		v := c.evaluate(context.Background(), claudehook.Payload{ToolName: "Bash", ToolInput: input, Cwd: it.cwd}, it.own)
		if v.Decision == claudehook.Deny && !v.ObserveOnly && v.RuleID != RuleTimeout {
			return cmd + " (" + v.RuleID + ")", true
		}
	}
	return "", false
}
