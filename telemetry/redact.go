package telemetry

import (
	"log/slog"
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

// RedactLogAttr is a slog ReplaceAttr function that redacts every string and error a log line
// carries: the daemon logs names the agent chose (tools, files, sessions) and errors that quote
// them, and its log must leak no more than the decision log.
func RedactLogAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value.Resolve(); {
	case v.Kind() == slog.KindString:
		if s := v.String(); s != "" {
			a.Value = slog.StringValue(RedactName(s))
		}
	case v.Kind() == slog.KindAny:
		if err, ok := v.Any().(error); ok && err != nil {
			a.Value = slog.StringValue(redactError(err.Error()))
		}
	}
	return a
}

// redactError redacts each part of a wrapped error's message alone as well: "open <name>: <why>"
// puts a colon after whatever the name holds, which a rule may not accept as a token's end.
func redactError(msg string) string {
	parts := strings.Split(msg, ": ")
	for i, p := range parts {
		parts[i] = RedactName(p)
	}
	return RedactName(strings.Join(parts, ": "))
}
