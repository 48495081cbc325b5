package spelling

import "testing"

func TestSuggestFindsTheNameMeantAndOnlyANearOne(t *testing.T) {
	fields := []string{"mode", "version", "cowork_enabled", "telemetry", "policy", "lockdown"}
	rules := []string{"bash.rm-critical", "bash.git-push-force", "read.dotenv"}
	for _, tt := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"mdoe", fields, "mode"},
		{"cowork_enable", fields, "cowork_enabled"},
		{"telemtry", fields, "telemetry"},
		{"bash.rm-critcal", rules, "bash.rm-critical"},
		{"bash.git-push-froce", rules, "bash.git-push-force"},
		{"colour", fields, ""},
		{"x", fields, ""},
		{"mode", fields, ""}, // itself is no suggestion
		{"bash.curl", rules, ""},
	} {
		got, ok := Suggest(tt.word, tt.candidates)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("Suggest(%q) = %q, %v; want %q", tt.word, got, ok, tt.want)
		}
	}
}
