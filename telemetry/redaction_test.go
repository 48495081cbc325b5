package telemetry

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
)

// redactionCorpus is the secrets package's corpus: a secret of every rule's shape, and split
// by quoting.
func redactionCorpus(t *testing.T) []secretCase {
	t.Helper()
	data, err := os.ReadFile("../secrets/testdata/redaction.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var rows []secretCase
	for line := range strings.Lines(string(data)) {
		var c secretCase
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, c)
	}
	return rows
}

// Every string of a record the agent can choose is redacted: the input's values and keys, the
// tool's name, the working folder, a URL's query.
func TestNoSecretOfTheCorpusReachesTheDecisionLog(t *testing.T) {
	l := Open(Options{Redact: true})
	for _, c := range append(redactionCorpus(t), secretCorpus(t)...) {
		key, _ := json.Marshal(c.Text)
		places := map[string]Record{
			"command":   {Tool: "Bash", Input: json.RawMessage(`{"command":` + string(key) + `}`)},
			"json key":  {Tool: "mcp__db__query", Input: json.RawMessage(`{` + string(key) + `:"x"}`)},
			"tool name": {Tool: "mcp__x__" + c.Text, Input: json.RawMessage(`{}`)},
			"cwd":       {Tool: "Read", Cwd: "/Users/ada/" + c.Text, Input: json.RawMessage(`{}`)},
			"url query": {Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://example.com/x?api_key=` + url.QueryEscape(strings.ReplaceAll(c.Secret, "''", "")) + `"}`)},
			"reason":    {Tool: "Bash", Reason: "denied " + c.Text, Input: json.RawMessage(`{}`)},
		}
		for place, rec := range places {
			line, err := l.Encode(rec)
			if err != nil {
				t.Fatalf("%s in %s: %v", c.Kind, place, err)
			}
			if leaks(string(line), c.Secret) {
				t.Errorf("%s in the %s: the secret %q reached the log: %s", c.Kind, place, c.Secret, line)
			}
		}
	}
}

// leaks reports whether secret, or the string the shell joins it into, stands in line in any
// of the spellings JSON or a URL give it.
func leaks(line, secret string) bool {
	for _, s := range []string{secret, strings.ReplaceAll(secret, "''", "")} {
		if len(s) < 6 {
			continue
		}
		enc, _ := json.Marshal(s)
		if strings.Contains(line, s) || strings.Contains(line, strings.Trim(string(enc), `"`)) || strings.Contains(line, url.QueryEscape(s)) {
			return true
		}
	}
	return false
}

// The daemon's log, written through RedactLogAttr, carries no secret of the corpus in its
// message, its string attributes or its errors.
func TestNoSecretOfTheCorpusReachesALogWrittenThroughRedactLogAttr(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: RedactLogAttr}))
	for _, c := range append(redactionCorpus(t), secretCorpus(t)...) {
		b.Reset()
		log.Warn("found "+c.Text, "tool", "mcp__x__"+c.Text, "err", fmt.Errorf("open %s: denied", c.Text),
			slog.Group("g", "why", c.Text))
		if leaks(b.String(), c.Secret) {
			t.Errorf("%s: the secret %q reached the log: %s", c.Kind, c.Secret, b.String())
		}
	}
}
