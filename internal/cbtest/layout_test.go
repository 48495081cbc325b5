package cbtest

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/coworkbridge/coworkbridge/"

// The architecture's package table says which of our packages each one imports: it is how a
// contributor learns the layout, so it must be the layout.
func TestArchitecturePackageTableIsTheLayout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rows := packageRows(t, filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if len(rows) < 15 {
		t.Fatalf("found %d rows in the package table; has its heading changed?", len(rows))
	}
	listed := map[string]bool{}
	for pkgs, want := range rows {
		for _, pkg := range strings.Split(pkgs, ", ") {
			pkg = strings.Trim(strings.TrimSuffix(strings.Trim(pkg, "`"), "/"), "`")
			listed[pkg] = true
			got, ok := imports(t, filepath.Join(root, pkg))
			if !ok {
				continue // not Go (deploy/)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s imports %v; the README says %v", pkg, got, want)
			}
		}
	}
	filepath.WalkDir(root, func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, dir)
		if _, ok := imports(t, dir); ok && rel != "." && !listed[filepath.ToSlash(rel)] {
			t.Errorf("package %s is missing from the README's table", rel)
		}
		return nil
	})
}

// packageRows reads the table under "| package | job | imports of ours |": first cell to the
// sorted list in the third.
func packageRows(t *testing.T, readme string) map[string][]string {
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case line == "| package | job | imports of ours |":
			in = true
		case in && !strings.HasPrefix(line, "|"):
			return rows
		case in && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, " | ")
			first := strings.TrimPrefix(cells[0], "| ")
			var deps []string
			for _, d := range strings.Split(strings.TrimSuffix(strings.TrimSpace(cells[len(cells)-1]), "|"), ",") {
				if d = strings.TrimSpace(d); d != "" && d != "—" {
					deps = append(deps, d)
				}
			}
			slices.Sort(deps)
			rows[first] = deps
		}
	}
	return rows
}

// imports lists the packages of ours that the Go files in dir import, from its non-test files
// (from its test files when it has no other, as e2e); ok is false when dir holds no Go.
func imports(t *testing.T, dir string) (deps []string, ok bool) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var src, tests []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			tests = append(tests, f)
		} else {
			src = append(src, f)
		}
	}
	if len(src) == 0 {
		src = tests
	}
	if len(src) == 0 {
		return nil, false
	}
	for _, f := range src {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ours := strings.CutPrefix(p, module); ours && !slices.Contains(deps, rest) {
				deps = append(deps, rest)
			}
		}
	}
	slices.Sort(deps)
	return deps, true
}
