package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The harness asks the store exactly the queries the shipping README gives a security team, so
// that the README's are the ones checked against a fleet.
func TestTheHarnessAsksTheREADMEsQueries(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "shipping", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.ReplaceAll(string(data), `\|`, "|") // a pipe inside a Markdown table cell
	for _, q := range []string{deniedQuery, quarantinedQuery, versionsQuery, unhealthyQuery, joinQuery} {
		if !strings.Contains(readme, "`"+q+"`") {
			t.Errorf("deploy/shipping/README.md does not give the harness's query\n%s", q)
		}
	}
}
