package health

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// The README's table of codes is the admins' reference: it lists every registered code, and
// nothing else.
func TestREADMEListsEveryCode(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "deploy", "REFERENCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var documented []Code
	cell := regexp.MustCompile("`([a-z_]+)`")
	inTable := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case line == "| code | meaning |":
			inTable = true
		case inTable && !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable && !strings.HasPrefix(line, "|---"):
			first := strings.Split(line, "|")[1]
			for _, m := range cell.FindAllStringSubmatch(first, -1) {
				documented = append(documented, Code(m[1]))
			}
		}
	}
	for _, c := range Codes() {
		if !slices.Contains(documented, c.Code) {
			t.Errorf("README's table of codes lacks %s", c.Code)
		}
	}
	for _, d := range documented {
		if strings.HasPrefix(d.Info().Title, "unknown code") {
			t.Errorf("README documents %s, which is not registered", d)
		}
	}
}
