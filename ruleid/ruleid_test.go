package ruleid_test

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/ruleid"
)

func TestEveryIDIsTheGuardsAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, id := range ruleid.All() {
		if !ruleid.IsGuard(id) || id == ruleid.Prefix {
			t.Errorf("%q is not a guard id", id)
		}
		if seen[id] {
			t.Errorf("%q is listed twice", id)
		}
		seen[id] = true
	}
	if ruleid.IsGuard("classifier.timeout") || ruleid.IsGuard("shell.rm-rf") {
		t.Error("a policy's rule taken for the guard's")
	}
}

// The ids live here alone: a literal spelling one elsewhere in the module is a second
// definition that can drift from this list.
func TestNoOtherPackageSpellsAGuardID(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cbtest.EachSource(t, root, func(path string, fset *token.FileSet, f *ast.File) {
		if filepath.Dir(path) == filepath.Join(root, "ruleid") || ownModule(root, path) {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && strings.HasPrefix(s, ruleid.Prefix) && len(s) > len(ruleid.Prefix) {
				t.Errorf("%s: %q: use package ruleid", fset.Position(lit.Pos()), s)
			}
			return true
		})
	})
}

// ownModule reports whether path lies in a module of its own below root (a go.mod between
// them), whose names are not this module's.
func ownModule(root, path string) bool {
	for dir := filepath.Dir(path); dir != root && len(dir) > len(root); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return true
		}
	}
	return false
}
