package effects

import (
	"strings"
	"testing"
)

// effectLines are effects as the rules see them.
func effectLines(es []Effect) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}

func TestConnectorEffectsComeFromTheShapeOfTheArgumentsNotTheServersName(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args map[string]any
		want []string // prefixes of the effect lines, in order
	}{
		{"a repository made public", "update_repository", map[string]any{"repo": "payroll", "private": false}, []string{"publish existing"}},
		{"visibility spelled out", "edit_project", map[string]any{"settings": map[string]any{"visibility": "PUBLIC"}}, []string{"publish existing"}},
		{"a new public repository", "create_repository", map[string]any{"name": "x", "private": false}, []string{"publish new"}},
		{"a public gist", "create_gist", map[string]any{"public": true}, []string{"publish new"}},
		{"a private repository stays private", "update_repository", map[string]any{"private": true}, nil},
		{"a read tool that reports visibility", "get_repository", map[string]any{"visibility": "public"}, nil},
		{"a blind copy", "send_email", map[string]any{"to": "a@x.example", "bcc": []any{"b@y.example"}}, []string{"message hidden to=b@y.example"}},
		{"a blind copy as objects", "create_draft", map[string]any{"bccRecipients": []any{map[string]any{"emailAddress": map[string]any{"address": "b@y.example"}}}}, []string{"message hidden to=b@y.example"}},
		{"an empty blind copy", "send_email", map[string]any{"to": "a@x.example", "bcc": ""}, nil},
		{"a forwarding rule", "update_settings", map[string]any{"autoForwarding": map[string]any{"enabled": true, "emailAddress": "b@y.example"}}, []string{"message forward to=b@y.example"}},
		{"a forward address", "create_filter", map[string]any{"action": map[string]any{"forward": "b@y.example"}}, []string{"message forward to=b@y.example"}},
		{"a visible copy", "send_email", map[string]any{"to": "a@x.example", "cc": "b@y.example"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := effectLines(ConnectorEffects("mcp:9f1c/"+tt.tool, tt.tool, anyOf(tt.args)))
			if len(got) != len(tt.want) {
				t.Fatalf("effects %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("effect %q, want it to start with %q", got[i], tt.want[i])
				}
			}
		})
	}
}

// anyOf is a map as json.Unmarshal gives it.
func anyOf(m map[string]any) any { return m }

func TestMemoryToolsAreThoseThatKeepWhatTheAgentReadsBack(t *testing.T) {
	tests := []struct {
		server, tool string
		want         bool
	}{
		{"memory", "add_observations", true},
		{"memory", "create_entities", true},
		{"mem0", "add_memory", true},
		{"9f1c", "store_memory", true},
		{"basic-memory", "write_note", true},
		{"memory", "search_nodes", false},
		{"memory", "read_graph", false},
		{"mem0", "get_memories", false},
		{"github", "create_issue", false},
	}
	for _, tt := range tests {
		if got := MemoryTool(tt.server, tt.tool); got != tt.want {
			t.Errorf("memoryTool(%q, %q) = %v, want %v", tt.server, tt.tool, got, tt.want)
		}
	}
}
