package managedconfig

import (
	"strings"
	"testing"
)

func parseWith(t *testing.T, blockMessage string) (Config, error) {
	t.Helper()
	env := Env{GOOS: "darwin", Home: "/Users/ada", Getenv: func(string) string { return "" }}
	paths, _ := env.Paths()
	return Parse([]byte(`{"version":1,"cowork_enabled":true,"block_message":`+blockMessage+`}`), "managed.json", env, paths)
}

func TestBlockMessageGivesEachRuleItsOwnWordsAndTheRestTheDefault(t *testing.T) {
	cfg, err := parseWith(t, `{
		"text": "Example Corp's AI policy stopped this.",
		"help_url": "https://it.example.com/ai?rule={rule}&event={rid}&who={user}@{host}",
		"rules": {"bash.rm-critical": {"text": "Deleting a home folder is never allowed."},
		          "read.dotenv": {"help_url": "https://it.example.com/secrets"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Policy.Notices
	facts := NoticeFacts{Rule: "bash.rm-critical", RID: "r1", Decision: "deny", User: "ada lovelace", Host: "mac&17"}
	got := n.Explain("coworkbridge: command \"rm -rf ~\" (rule bash.rm-critical)", facts)
	want := "Deleting a home folder is never allowed.\ncoworkbridge: command \"rm -rf ~\" (rule bash.rm-critical)\n" +
		"More: https://it.example.com/ai?rule=bash.rm-critical&event=r1&who=ada+lovelace@mac%2617"
	if got != want {
		t.Errorf("rule with its own text:\n%s\nwant\n%s", got, want)
	}
	facts.Rule = "read.dotenv"
	if got := n.Explain("why", facts); got != "Example Corp's AI policy stopped this.\nwhy\nMore: https://it.example.com/secrets" {
		t.Errorf("rule with its own URL:\n%s", got)
	}
	if got := (Notices{}).Explain("why", facts); got != "why" {
		t.Errorf("no notice configured: %q, want the reason alone", got)
	}
	// An ask is no block: the default block text is left out, a rule's own words and the page stay.
	facts.Decision = "ask"
	if got := n.Explain("why", facts); got != "why\nMore: https://it.example.com/secrets" {
		t.Errorf("an ask under the default text:\n%s", got)
	}
	facts.Rule = "bash.rm-critical"
	if got := n.Explain("why", facts); !strings.HasPrefix(got, "Deleting a home folder is never allowed.\nwhy") {
		t.Errorf("an ask of a rule with its own words:\n%s", got)
	}
}

func TestBlockMessageProblemsAreEachNamed(t *testing.T) {
	tests := []struct{ name, value, field, want string }{
		{"unknown placeholder", `{"help_url": "https://x.example/{rul}"}`, "block_message.help_url", "{rul} is not a placeholder"},
		{"not a web address", `{"help_url": "file:///etc/passwd"}`, "block_message.help_url", "want an https:// address"},
		{"in the clear", `{"help_url": "http://it.example.com/ai?u={user}"}`, "block_message.help_url", "use https://"},
		{"no host", `{"help_url": "https:///x"}`, "block_message.help_url", "has no host"},
		{"empty text", `{"text": "  "}`, "block_message.text", "empty"},
		{"text too long", `{"text": "` + strings.Repeat("a", 600) + `"}`, "block_message.text", "keep it under 500"},
		{"control character", `{"text": "a\u001bb"}`, "block_message.text", "control character"},
		{"rule id shape", `{"rules": {"Bash RM": {"text": "x"}}}`, "block_message.rules.Bash RM", "not a rule id"},
		{"misspelled field", `{"txt": "x"}`, "block_message.txt", "did you mean text?"},
		{"nested rules", `{"rules": {"bash.x": {"rules": {}}}}`, "block_message.rules.bash.x.rules", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseWith(t, tt.value)
			inv, ok := err.(*InvalidError)
			if !ok {
				t.Fatalf("error %v, want an InvalidError", err)
			}
			for _, p := range inv.Problems {
				if p.Field == tt.field && strings.Contains(p.Msg, tt.want) {
					return
				}
			}
			t.Errorf("problems %v, want %s: ...%s...", inv.Problems, tt.field, tt.want)
		})
	}
}
