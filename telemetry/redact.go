package telemetry

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/coworkbridge/coworkbridge/secrets"
)

// Redact replaces every value in s that looks like a secret by [REDACTED:<kind>]. Every rule
// looks at the original text, so no rule's replacement can hide another rule's context; where
// spans overlap they are merged and named after the earliest rule.
//
// A secret broken across lines (a token wrapped in written content) is looked for in the text
// with its line breaks taken out as well, and hidden whole, both halves and the break.
func Redact(s string) string {
	found := secrets.Find(s)
	if strings.ContainsAny(s, "\r\n") {
		found = mergeSpans(append(found, acrossLines(s)...))
	}
	return redactFound(s, found)
}

// acrossLines finds the secrets of s read with its line breaks taken out, as spans of s.
func acrossLines(s string) []secrets.Finding {
	var joined strings.Builder
	at := make([]int, 0, len(s)) // at[i]: where joined's byte i stands in s
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			continue
		}
		joined.WriteByte(s[i])
		at = append(at, i)
	}
	var out []secrets.Finding
	for _, f := range secrets.Find(joined.String()) {
		if f.End > f.Start {
			out = append(out, secrets.Finding{Kind: f.Kind, Start: at[f.Start], End: at[f.End-1] + 1})
		}
	}
	return out
}

// mergeSpans sorts findings and joins those that overlap, keeping the earlier one's kind.
func mergeSpans(fs []secrets.Finding) []secrets.Finding {
	slices.SortFunc(fs, func(a, b secrets.Finding) int { return a.Start - b.Start })
	var out []secrets.Finding
	for _, f := range fs {
		if n := len(out); n > 0 && f.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, f.End)
			continue
		}
		out = append(out, f)
	}
	return out
}

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
