package classifier

import (
	"context"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// A session's agent works in its own folder, and in no other session's: on the Mac (the host
// loop) its file tools reach every session, coworkbridge's files and the Claude app's.
func TestASessionReachesItsOwnFolderAndNothingTheMapProtects(t *testing.T) {
	c := newTestClassifier(t, Policy{Places: testPlaces})
	own := testSessions + "/o/o/local_a"
	other := testSessions + "/o/o/local_b"
	glob := func(path, pattern string) claudehook.Payload {
		return payload("Glob", map[string]any{"path": path, "pattern": pattern})
	}
	tests := []struct {
		name string
		call claudehook.Payload
		want string // the rule, "" for none
	}{
		{"its own transcript", read(own + "/.claude/projects/p/t.jsonl"), ""},
		{"its own outputs", write(own+"/outputs/report.md", "x"), ""},
		{"another session's transcript", read(other + "/.claude/projects/p/t.jsonl"), "read.other-session"},
		{"another session's memory", write(other+"/.claude/projects/p/memory/MEMORY.md", "x"), "path.other-session"},
		{"another session, spelt in another case", read(testSessions + "/O/O/LOCAL_B/outputs/x"), "read.other-session"},
		{"another session's metadata", read(testSessions + "/o/o/local_b.json"), "read.other-session"},
		{"a search of the app's folder", glob("/Users/ada/Library/Application Support/Claude", "**/*.jsonl"), "read.other-session"},
		{"a search of the home folder", glob("/Users/ada", "**/*.md"), ""},
		{"the decision log", read("/Users/ada/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"a healthy health.json", write("/Users/ada/Library/Application Support/CoworkBridge/health.json", "{}"), "path.guard-files"},
		{"its own host channel", write("/Users/ada/Library/Application Support/CoworkBridge/channel/local_a/events.jsonl", "{}"), "path.guard-files"},
		{"the program", write("/usr/local/bin/coworkbridge", "x"), "path.guard-files"},
		{"the app's configuration, read", read("/Users/ada/Library/Application Support/Claude/claude_desktop_config.json"), ""},
		{"the managed settings, written", write("/Library/Application Support/ClaudeCode/managed-settings.d/x.json", "{}"), "path.claude-config"},
		{"an MCP file tool", payload("mcp__filesystem__write_file", map[string]any{"path": other + "/outputs/x.md", "content": "x"}), "read.other-session"},
	}
	for _, tt := range tests {
		v := c.EvaluateFrom(context.Background(), tt.call, own)
		if v.RuleID != tt.want && !(tt.want == "" && v.Decision == claudehook.Allow) {
			t.Errorf("%s: %s %s (%s), want %q", tt.name, v.Decision, v.RuleID, v.Matched, tt.want)
		}
	}
}

// A call from no session (a CLI the user runs in a terminal) reaches no session's folder.
func TestACallFromNoSessionReachesNoSessionsFolder(t *testing.T) {
	c := newTestClassifier(t, Policy{Places: testPlaces})
	v := c.Evaluate(context.Background(), read(testSessions+"/o/o/local_a/outputs/x.md"))
	if v.RuleID != "read.other-session" {
		t.Errorf("got %s %s, want read.other-session", v.Decision, v.RuleID)
	}
}
