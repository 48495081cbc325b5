// Package claudehook speaks Claude Code's hook protocol: the PreToolUse payload Claude Code sends
// on a hook's stdin, the spool envelope coworkbridge's hook wraps it in, and the JSON a hook
// prints to deny or ask.
//
// It only decodes and encodes; it judges nothing (see classifier) and touches no files.
package claudehook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Payload is the PreToolUse input. ToolInput stays raw: its shape depends on the tool.
type Payload struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	// PromptID names the user prompt the call answers (CLI 2.1.329 and later): Claude Code's own
	// telemetry carries it as prompt.id.
	PromptID  string `json:"prompt_id,omitempty"`
	AgentID   string `json:"agent_id,omitempty"`
	AgentType string `json:"agent_type,omitempty"`
}

// camelCase spellings some Claude Code builds and SDKs use, mapped to the canonical fields.
var camel = [...]struct{ from, to string }{
	{"sessionId", "session_id"}, {"transcriptPath", "transcript_path"}, {"permissionMode", "permission_mode"},
	{"hookEventName", "hook_event_name"}, {"toolName", "tool_name"}, {"toolInput", "tool_input"},
	{"toolUseId", "tool_use_id"}, {"agentId", "agent_id"}, {"agentType", "agent_type"}, {"promptId", "prompt_id"},
}

// ErrNoTool is returned for a payload that names no tool: nothing can be judged.
var ErrNoTool = errors.New("payload names no tool")

// ParsePayload decodes a payload, tolerating unknown fields and camelCase variants.
func ParsePayload(data []byte) (Payload, error) {
	var p Payload
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return p, fmt.Errorf("decode hook payload: %w", err)
	}
	if fields == nil {
		return p, fmt.Errorf("decode hook payload: %w", ErrNoTool)
	}
	for _, c := range camel {
		if v, ok := fields[c.from]; ok {
			if _, has := fields[c.to]; !has {
				fields[c.to] = v
			}
		}
	}
	norm, _ := json.Marshal(fields)
	if err := json.Unmarshal(norm, &p); err != nil {
		return p, fmt.Errorf("decode hook payload: %w", err)
	}
	if p.ToolName == "" {
		return p, fmt.Errorf("decode hook payload: %w", ErrNoTool)
	}
	return p, nil
}

// Envelope is one spool line as the hook writes it.
type Envelope struct {
	V     int             `json:"v"`
	RID   string          `json:"rid"`
	Mode  string          `json:"mode"`
	Event json.RawMessage `json:"event"`
}

// ValidRID reports whether rid is exactly 32 lower-case hex digits: anything else must never be
// used in a file name. (Written out, not as an expression: every hook process links this
// package, and would compile it at start.)
func ValidRID(rid string) bool {
	if len(rid) != 32 {
		return false
	}
	for i := 0; i < len(rid); i++ {
		if c := rid[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ParseEnvelope decodes a spool line. A line that is a bare payload (no envelope) is accepted as
// an observe event with no rid.
func ParseEnvelope(line []byte) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(line, &e); err != nil {
		return e, fmt.Errorf("decode spool line: %w", err)
	}
	if e.V == 0 && e.Event == nil {
		return Envelope{Mode: "observe", Event: json.RawMessage(bytes.TrimSpace(line))}, nil
	}
	if e.V != 1 {
		return e, fmt.Errorf("decode spool line: envelope version %d, this build reads 1", e.V)
	}
	if !ValidRID(e.RID) {
		return e, fmt.Errorf("decode spool line: bad request id %q", e.RID)
	}
	return e, nil
}

// envelopeHead is how every spool line begins: the version, then the rid, so that a line whose
// event is damaged still names its waiting hook.
const envelopeHead = `{"v":1,"rid":"`

// EnvelopeFormat is the printf format a hook written in shell writes a spool line with: the rid
// and the payload are its two %s, mode is fixed in it, and it begins and ends with a newline (\n):
// whatever unterminated junk the agent left at the spool's end is closed off as a line of its
// own, and the hook's line stays whole (readers skip the blank lines this leaves). It holds no
// single quote, so that the script can quote it.
func EnvelopeFormat(mode string) string {
	return `\n` + envelopeHead + `%s","mode":"` + mode + `","event":%s}\n`
}

// RecoverRID returns the rid at the start of a (possibly damaged or cut) spool line: the
// envelope's head, 32 lower-case hex digits and their closing quote.
func RecoverRID(prefix []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(prefix, []byte(envelopeHead))
	if !ok || len(rest) < 33 || rest[32] != '"' || !ValidRID(string(rest[:32])) {
		return "", false
	}
	return string(rest[:32]), true
}

// Decision is what a verdict asks Claude Code to do.
type Decision string

// Decisions. Allow means "no objection": it renders as nothing, so that Claude Code's own
// permission rules still apply; coworkbridge never prints "allow".
const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// Output renders a decision as hook output: nil for Allow, else one JSON line.
func Output(d Decision, reason, context string) []byte {
	if d != Ask && d != Deny {
		return nil
	}
	out := map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       string(d),
		"permissionDecisionReason": reason,
	}}
	if context != "" {
		out["hookSpecificOutput"].(map[string]any)["additionalContext"] = context
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // strings only: cannot fail
	return b.Bytes()
}

// DenyFormat is the printf format of a deny, for a hook written in shell: the reason is prefix
// followed by its one %s, which must need no JSON escaping; it ends with a newline (\n) and holds
// no single quote.
func DenyFormat(prefix string) string { return DenyFormatAround(prefix, "") }

// DenyFormatAround is DenyFormat with text after the reason as well (an organisation's help page).
// printf reads backslash escapes in its format as well as %: the JSON's own (\n, \", \\ in an
// organisation's text) are doubled so that they reach the output as written, and stay JSON.
func DenyFormatAround(prefix, suffix string) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	out := strings.TrimSuffix(string(Output(Deny, esc(prefix)+"%s"+esc(suffix), "")), "\n")
	return strings.ReplaceAll(out, `\`, `\\`) + `\n`
}

// Answer is what a PreToolUse hook's output asks of Claude Code.
type Answer struct {
	// Decision is Allow when the hook printed nothing (no objection).
	Decision Decision
	Reason   string
	Context  string
}

// ErrUnreadableOutput is a hook output Claude Code could not use: not JSON, or no decision.
var ErrUnreadableOutput = errors.New("hook output is not a PreToolUse decision")

// ParseOutput reads what a PreToolUse hook printed, as Claude Code does: nothing (or only space)
// is no objection; otherwise one JSON object whose hookSpecificOutput names the decision.
func ParseOutput(out []byte) (Answer, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return Answer{Decision: Allow}, nil
	}
	var o struct {
		H struct {
			Decision Decision `json:"permissionDecision"`
			Reason   string   `json:"permissionDecisionReason"`
			Context  string   `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &o); err != nil || o.H.Decision == "" {
		return Answer{}, fmt.Errorf("%w: %.80q", ErrUnreadableOutput, out)
	}
	return Answer{Decision: o.H.Decision, Reason: o.H.Reason, Context: o.H.Context}, nil
}
