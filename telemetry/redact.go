package telemetry

import (
	"strings"

	"github.com/coworkbridge/coworkbridge/secrets"
)

// Redact replaces every value in s that looks like a secret by [REDACTED:<kind>]. Every rule
// looks at the original text, so no rule's replacement can hide another rule's context; where
// spans overlap they are merged and named after the earliest rule.
func Redact(s string) string { return redactFound(s, secrets.Find(s)) }

// RedactName is Redact for a name built of parts: a path, an MCP tool's name.
func RedactName(s string) string { return redactFound(s, secrets.FindInName(s)) }

func redactFound(s string, found []secrets.Finding) string {
	if len(found) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, f := range found {
		b.WriteString(s[last:f.Start])
		b.WriteString("[REDACTED:" + f.Kind + "]")
		last = f.End
	}
	b.WriteString(s[last:])
	return b.String()
}

// isSecretField reports whether an object key names a secret.
func isSecretField(key string) bool { return secrets.FieldName(key) }
