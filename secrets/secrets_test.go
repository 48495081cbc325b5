package secrets

import (
	"strings"
	"testing"
)

func TestFindNamesEachKindOfSecret(t *testing.T) {
	tests := []struct{ text, kind string }{
		{"key: ghp_" + strings.Repeat("a", 36), "github_token"},
		{"AKIAIOSFODNN7EXAMPLE", "aws_access_key"},
		{"xoxb-1234567890-abcdefghij", "slack_token"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", "private_key"},
		{"https://ada:hunter22@db.example.com/x", "url_password"},
		{"export API_TOKEN=abc123def", "env_secret"},
		{"Authorization: Bearer abcdefgh12345678", "bearer_token"},
		{"sk-ant-" + strings.Repeat("b", 30), "anthropic_key"},
	}
	for _, tt := range tests {
		found := Find(tt.text)
		if len(found) != 1 || found[0].Kind != tt.kind {
			t.Errorf("Find(%q) = %+v, want one %s", tt.text, found, tt.kind)
			continue
		}
		if !Contains(tt.text) {
			t.Errorf("Contains(%q) = false", tt.text)
		}
	}
}

func TestOrdinaryTextHoldsNoSecret(t *testing.T) {
	for _, s := range []string{
		"Quarterly report: revenue up 12%",
		"the token bucket algorithm limits rates",
		"https://example.com/docs?page=2",
		"password reset instructions are in the wiki",
		"sk-short",
	} {
		if found := Find(s); len(found) != 0 || Contains(s) {
			t.Errorf("Find(%q) = %+v, want nothing", s, found)
		}
	}
}

func TestOverlappingFindingsAreMergedUnderTheMostSpecificKind(t *testing.T) {
	s := "PASSWORD=ghp_" + strings.Repeat("c", 36)
	found := Find(s)
	if len(found) != 1 || found[0].Kind != "github_token" {
		t.Fatalf("Find = %+v, want one github_token", found)
	}
}

func TestFieldNamesThatHoldSecrets(t *testing.T) {
	for key, want := range map[string]bool{"password": true, "api_key": true, "client_secret": true, "x-auth": true, "title": false, "path": false} {
		if got := FieldName(key); got != want {
			t.Errorf("FieldName(%q) = %v", key, got)
		}
	}
}

func FuzzFind(f *testing.F) {
	f.Add("ghp_" + strings.Repeat("a", 36))
	f.Add("-----BEGIN RSA PRIVATE KEY-----")
	f.Add("a://b:c@d")
	f.Fuzz(func(t *testing.T, s string) {
		last := 0
		for _, fd := range Find(s) {
			if fd.Start < last || fd.End <= fd.Start || fd.End > len(s) {
				t.Fatalf("finding %+v out of order or range in %q", fd, s)
			}
			last = fd.End
		}
	})
}
