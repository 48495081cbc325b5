package cbtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every package says in its doc comment what it does and what it does not: the comment names
// the package ("Package x ..." or "Command x ...") and draws a line ("not", "never", "only").
func TestEveryPackageSaysWhatItDoesAndDoesNot(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	limit := regexp.MustCompile(`\b(not|never|only|nothing)\b`)
	checked := 0
	filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		docs, err := packageDocs(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			return nil
		}
		for name, doc := range docs {
			checked++
			rel, _ := filepath.Rel(root, dir)
			want := "Package " + name
			if name == "main" {
				want = "Command " + filepath.Base(dir)
			}
			switch {
			case !strings.HasPrefix(doc, want):
				t.Errorf("%s: the doc comment must begin %q", rel, want)
			case !limit.MatchString(doc):
				t.Errorf("%s: the doc comment does not say what the package does not do", rel)
			}
		}
		return nil
	})
	if checked < 10 {
		t.Fatalf("checked only %d packages; has the layout changed?", checked)
	}
}

// packageDocs returns, for each package in dir (its non-test files), the doc comments of its
// files joined.
func packageDocs(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	docs := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return nil, err
		}
		doc := docs[f.Name.Name]
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		docs[f.Name.Name] = doc
	}
	return docs, nil
}
