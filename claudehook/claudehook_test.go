package claudehook

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseEveryReferencePayload(t *testing.T) {
	files, _ := filepath.Glob("../../shared/reference/payloads/*.json")
	if len(files) == 0 {
		cbtest.NoShared(t, "the reference payloads", os.ErrNotExist)
	}
	for _, f := range files {
		data, _ := os.ReadFile(f)
		p, err := ParsePayload(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if p.ToolName == "" || p.HookEventName != "PreToolUse" || len(p.ToolInput) == 0 || p.SessionID == "" {
			t.Errorf("%s: %+v", filepath.Base(f), p)
		}
	}
}

func TestParsePayloadAcceptsCamelCaseAndUnknownFields(t *testing.T) {
	p, err := ParsePayload([]byte(`{"sessionId":"s","toolName":"Bash","toolInput":{"command":"ls"},"future_field":[1],"cwd":"/x"}`))
	if err != nil || p.SessionID != "s" || p.ToolName != "Bash" || string(p.ToolInput) != `{"command":"ls"}` || p.Cwd != "/x" {
		t.Errorf("%+v %v", p, err)
	}
	p, _ = ParsePayload([]byte(`{"tool_name":"Read","toolName":"Bash"}`))
	if p.ToolName != "Read" {
		t.Errorf("snake_case must win over camelCase, got %q", p.ToolName)
	}
}

func TestParsePayloadRejects(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `{}`, `{"tool_name":""}`, `{"tool_name":3}`, `{"tool_name":"Bash"`} {
		if _, err := ParsePayload([]byte(in)); err == nil {
			t.Errorf("ParsePayload(%q) accepted", in)
		}
	}
	if _, err := ParsePayload([]byte(`{}`)); !errors.Is(err, ErrNoTool) {
		t.Errorf("want ErrNoTool, got %v", err)
	}
}

func TestEnvelopes(t *testing.T) {
	rid := "0123456789abcdef0123456789abcdef"
	e, err := ParseEnvelope([]byte(`{"v":1,"rid":"` + rid + `","mode":"enforce","event":{"tool_name":"Bash"}}`))
	if err != nil || e.RID != rid || e.Mode != "enforce" || string(e.Event) != `{"tool_name":"Bash"}` {
		t.Errorf("%+v %v", e, err)
	}
	e, err = ParseEnvelope([]byte(`{"tool_name":"Bash","tool_input":{}}` + "\n"))
	if err != nil || e.RID != "" || e.Mode != "observe" || !strings.Contains(string(e.Event), "Bash") {
		t.Errorf("bare payload: %+v %v", e, err)
	}
	for _, bad := range []string{
		`{"v":2,"rid":"` + rid + `","event":{}}`,
		`{"v":1,"rid":"../../etc/passwd","event":{}}`,
		`{"v":1,"rid":"0123456789ABCDEF0123456789ABCDEF","event":{}}`,
		`{"v":1,"rid":"` + rid + `","event":}`,
	} {
		if _, err := ParseEnvelope([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if got, ok := RecoverRID([]byte(`{"v":1,"rid":"` + rid + `","mode":"enforce","event":{"tool_na`)); !ok || got != rid {
		t.Errorf("RecoverRID = %q %v", got, ok)
	}
	if _, ok := RecoverRID([]byte(`{"v":1,"rid":"short"`)); ok {
		t.Error("recovered a bad rid")
	}
}

func TestOutput(t *testing.T) {
	if out := Output(Allow, "x", ""); out != nil {
		t.Errorf("allow must print nothing, got %s", out)
	}
	out := Output(Deny, `blocked "rm -rf /" <by> rule`, "try git stash")
	var v struct {
		H map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.H["permissionDecision"] != "deny" || v.H["hookEventName"] != "PreToolUse" ||
		v.H["permissionDecisionReason"] != `blocked "rm -rf /" <by> rule` || v.H["additionalContext"] != "try git stash" {
		t.Errorf("%s", out)
	}
	if !strings.HasSuffix(string(out), "}\n") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("want one line: %q", out)
	}
	if !strings.Contains(string(Output(Ask, "r", "")), `"permissionDecision":"ask"`) {
		t.Error("ask")
	}
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(`{"v":1,"rid":"0123456789abcdef0123456789abcdef","mode":"enforce","event":{"tool_name":"Bash"}}`))
	f.Add([]byte(`{"tool_name":"Bash"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEnvelope(line)
		if err == nil && e.RID != "" && !ValidRID(e.RID) {
			t.Fatalf("accepted rid %q", e.RID)
		}
		if rid, ok := RecoverRID(line); ok && !ValidRID(rid) {
			t.Fatalf("recovered rid %q", rid)
		}
		if err == nil {
			ParsePayload(e.Event)
		}
	})
}

func TestParseOutputReadsWhatOutputWrites(t *testing.T) {
	for _, d := range []Decision{Allow, Ask, Deny} {
		a, err := ParseOutput(Output(d, "coworkbridge: rule x", "try y"))
		if err != nil || a.Decision != d {
			t.Fatalf("%s: %+v, %v", d, a, err)
		}
		if d != Allow && (a.Reason != "coworkbridge: rule x" || a.Context != "try y") {
			t.Errorf("%s: reason %q, context %q", d, a.Reason, a.Context)
		}
	}
	for _, bad := range []string{"not json", `{"hookSpecificOutput":{}}`, `{"decision":"block"}`} {
		if _, err := ParseOutput([]byte(bad)); !errors.Is(err, ErrUnreadableOutput) {
			t.Errorf("%q: %v, want ErrUnreadableOutput", bad, err)
		}
	}
}

func FuzzParseOutput(f *testing.F) {
	f.Add([]byte(Output(Deny, "r", "")))
	f.Add([]byte(" \n"))
	f.Add([]byte(`{"hookSpecificOutput":{"permissionDecision":"ask"}}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		a, err := ParseOutput(out)
		if err == nil && a.Decision == "" {
			t.Fatal("a readable output without a decision")
		}
	})
}

// A hook written in shell writes the envelope and its own denies with these formats: what it
// prints must read back as this package reads it.
func TestTheShellFormatsReadBack(t *testing.T) {
	rid := "0123456789abcdef0123456789abcdef"
	for _, mode := range []string{"observe", "enforce"} {
		line := fmt.Sprintf(strings.ReplaceAll(EnvelopeFormat(mode), `\n`, "\n"), rid, `{"tool_name":"Bash"}`)
		e, err := ParseEnvelope([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil || e.RID != rid || e.Mode != mode || string(e.Event) != `{"tool_name":"Bash"}` {
			t.Errorf("%s: %+v, %v", mode, e, err)
		}
		if !strings.HasPrefix(line, "\n") {
			t.Errorf("%s: the line does not start on a fresh line", mode)
		}
		if got, ok := RecoverRID([]byte(line[1:50])); !ok || got != rid {
			t.Errorf("%s: rid %q not recovered from the line's head", mode, got)
		}
		if strings.Contains(EnvelopeFormat(mode), "'") {
			t.Errorf("%s: the format holds a single quote", mode)
		}
	}
	out := fmt.Sprintf(strings.ReplaceAll(DenyFormat("coworkbridge: "), `\n`, "\n"), "the daemon is not running")
	if a, err := ParseOutput([]byte(out)); err != nil || a.Decision != Deny || a.Reason != "coworkbridge: the daemon is not running" {
		t.Errorf("deny format: %+v, %v", a, err)
	}
	if want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"coworkbridge: %s"}}\n`; DenyFormat("coworkbridge: ") != want {
		t.Errorf("DenyFormat changed the hook's bytes: %s", DenyFormat("coworkbridge: "))
	}
}

func TestValidRIDIsExactly32LowerCaseHexDigits(t *testing.T) {
	for rid, want := range map[string]bool{
		strings.Repeat("a", 32): true, "0123456789abcdef0123456789abcdef": true,
		strings.Repeat("a", 31): false, strings.Repeat("a", 33): false, strings.Repeat("A", 32): false,
		strings.Repeat("g", 32): false, "": false, "../" + strings.Repeat("a", 29): false,
	} {
		if ValidRID(rid) != want {
			t.Errorf("ValidRID(%q) = %v, want %v", rid, !want, want)
		}
	}
	if _, ok := RecoverRID([]byte(`{"v":1,"rid":"` + strings.Repeat("a", 32) + `x`)); ok {
		t.Error("a rid not closed by its quote was recovered")
	}
}

// IsConfigChange answers as EventName does, whatever the payload: its shortcut for a payload
// that cannot name the event never misses one (an escaped letter, a key in other case).
func FuzzIsConfigChange(f *testing.F) {
	f.Add([]byte(`{"hook_event_name":"ConfigChange","file_path":"/x"}`))
	f.Add([]byte(`{"hook_event_name":"\u0043onfigChange"}`))
	f.Add([]byte(`{"HOOK_EVENT_NAME":"ConfigChange"}`))
	f.Add([]byte(`{"hookEventName":"Config\u0043hange"}`))
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_input":{"command":"echo ConfigChange"}}`))
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_input":{"command":"printf '\\u0041'"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := IsConfigChange(data), EventName(data) == EventConfigChange; got != want {
			t.Fatalf("IsConfigChange(%q) = %v, EventName says %v", data, got, want)
		}
	})
}
