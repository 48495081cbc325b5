package health

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEveryCodeIsRegisteredOnceWithItsMeaningAndAction(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c.Code] {
			t.Errorf("%s registered twice", c.Code)
		}
		seen[c.Code] = true
		if c.Title == "" || c.Action == "" || (c.Severity != SeverityError && c.Severity != SeverityWarning) {
			t.Errorf("%s: title %q, action %q, severity %q", c.Code, c.Title, c.Action, c.Severity)
		}
	}
	if info := Code("no_such_code").Info(); info.Severity != SeverityError || info.Action != "" {
		t.Errorf("an unknown code reads as %+v; it must show as an error with no action", info)
	}
}

var update = flag.Bool("update", false, "rewrite deploy/REFERENCE.md's table of codes from the registry")

// The reference's table of codes is the admins' reference, generated from the registry: every
// code, in the registry's order, with its text. go test ./health -run Reference -update
// rewrites it after a code is added or changed.
func TestTheReferenceTableOfCodesIsTheRegistry(t *testing.T) {
	path := filepath.Join("..", "deploy", "REFERENCE.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const head = "| code | meaning |\n|---|---|\n"
	start := strings.Index(string(data), head)
	if start < 0 {
		t.Fatalf("%s has no table headed %q", path, head)
	}
	start += len(head)
	end := start
	for end < len(data) && data[end] == '|' {
		end += strings.IndexByte(string(data[end:]), '\n') + 1
	}
	var want strings.Builder
	for _, c := range Codes() {
		fmt.Fprintf(&want, "| `%s` | %s |\n", c.Code, c.Reference())
	}
	if string(data[start:end]) == want.String() {
		return
	}
	if !*update {
		t.Fatalf("%s's table of codes is not the registry's; run go test ./health -run Reference -update", path)
	}
	out := append(append(append([]byte{}, data[:start]...), want.String()...), data[end:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
