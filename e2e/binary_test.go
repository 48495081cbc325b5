package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statBinarySources looks at every Go source file of the module but the tests. The tests run the
// coworkbridge binary, which buildCoworkbridge makes with go build, and go test's cache cannot
// see into that: a cached pass could be a pass of an older binary. go test does record the
// files a test looks at, so that a change to any of them is a cache miss.
func statBinarySources(t testing.TB) {
	n := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "e2e"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		n++
		_, err = os.Stat(path)
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("cannot look at the module's sources (%d files): %v", n, err)
	}
}
