package cbtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// EachSource parses every non-test Go file of the module under root (hidden folders and testdata
// left out) and hands it to visit with its path and file set; a file that does not parse is a
// test error. It is for tests that hold for the whole module's source.
func EachSource(t testing.TB, root string, visit func(path string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		visit(path, fset, f)
		return nil
	})
	if err != nil {
		t.Fatalf("walk the module's source: %v", err)
	}
}
