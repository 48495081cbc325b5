package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every switch that turns a test's skip into a failure (COWORKBRIDGE_<NAME>=require) is named in the
// README, so that no quiet skip is unknown to whoever reads a green run.
func TestTheREADMENamesEverySwitchThatMakesASkipAFailure(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	switches := regexp.MustCompile(`"(COWORKBRIDGE_[A-Z0-9_]+)"\) == "require"|(COWORKBRIDGE_[A-Z0-9_]+)=require`)
	seen := map[string]bool{}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range switches.FindAllSubmatch(src, -1) {
			seen[string(m[1])+string(m[2])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 3 {
		t.Fatalf("found only %v: the search is broken", seen)
	}
	for name := range seen {
		if !strings.Contains(string(readme), name+"=require") {
			t.Errorf("README.md does not name %s=require", name)
		}
	}
}
