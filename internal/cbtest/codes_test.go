package cbtest

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every log line that names a code names a registered one (health.Code constants), never a
// string of its own: alerting rules key on these codes, and the registry says what each means.
func TestEveryLoggedCodeIsARegisteredConstant(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	EachSource(t, root, func(path string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || isNameSet(call) {
				return true
			}
			for i := 0; i+1 < len(call.Args); i++ {
				if key, ok := call.Args[i].(*ast.BasicLit); !ok || key.Value != `"code"` {
					continue
				}
				found++
				if !isCodeConstant(call.Args[i+1]) {
					t.Errorf("%s: the \"code\" of a log line must be a health.Code constant", fset.Position(call.Args[i+1].Pos()))
				}
			}
			return true
		})
	})
	if found < 10 {
		t.Fatalf("found only %d coded log lines; has the layout changed?", found)
	}
}

// isNameSet is a set of names written out (nameset.Of), which may hold the word "code" (VS
// Code's command) with no log line in sight.
func isNameSet(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "nameset" && sel.Sel.Name == "Of"
}

// isCodeConstant accepts health.CodeX, CodeX inside health, and a warning's Code field (typed
// health.Code, which the compiler checks).
func isCodeConstant(e ast.Expr) bool {
	switch v := e.(type) {
	case *ast.SelectorExpr:
		return strings.HasPrefix(v.Sel.Name, "Code")
	case *ast.Ident:
		return strings.HasPrefix(v.Name, "Code")
	}
	return false
}
