package lazyregexp

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
)

func TestAnExpressionIsCompiledOnceAndKept(t *testing.T) {
	re := New(`^a+$`)
	first, again := re.Regexp(), re.Regexp()
	if !first.MatchString("aaa") || first.MatchString("b") || first != again {
		t.Error("the expression does not match as written, or is compiled more than once")
	}
}

func TestABadExpressionPanicsOnFirstUseNotBefore(t *testing.T) {
	re := New(`(`)
	defer func() {
		if recover() == nil {
			t.Error("a bad expression did not panic when used")
		}
	}()
	re.Regexp()
}

// Every expression the module writes with New compiles: a mistake would otherwise show as a panic
// in the call that first needs it (a deny, in the host hook), not as a failing test.
func TestEveryExpressionOfTheModuleCompiles(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	cbtest.EachSource(t, root, func(path string, _ *token.FileSet, af *ast.File) {
		ast.Inspect(af, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok || !callsNew(call) || filepath.Base(filepath.Dir(path)) == "lazyregexp" {
				return true
			}
			src, ok := constString(call.Args[0])
			if !ok {
				t.Errorf("%s: lazyregexp.New of something not a constant string", path)
				return true
			}
			n++
			if _, err := regexp.Compile(src); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			return true
		})
	})
	if n < 60 {
		t.Fatalf("found %d expressions; has the package been renamed?", n)
	}
}

func callsNew(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "New" || len(call.Args) != 1 {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "lazyregexp"
}

// constString evaluates a string literal, a sum of them, or regexp.QuoteMeta of one.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		a, ok1 := constString(e.X)
		b, ok2 := constString(e.Y)
		return a + b, ok1 && ok2 && e.Op == token.ADD
	case *ast.ParenExpr:
		return constString(e.X)
	}
	return "", false
}

func TestABadExpressionPanicsAtEveryUse(t *testing.T) {
	re := New(`(`)
	for i := range 2 {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("use %d of a bad expression did not panic", i+1)
				}
			}()
			re.Regexp()
		}()
	}
}

func TestAnExpressionIsCompiledOnceAcrossGoroutines(t *testing.T) {
	re := New(`^b+$`)
	var wg sync.WaitGroup
	got := make([]*regexp.Regexp, 8)
	for i := range got {
		wg.Go(func() { got[i] = re.Regexp() })
	}
	wg.Wait()
	for _, r := range got {
		if r != got[0] || !r.MatchString("bb") {
			t.Fatal("goroutines saw different or wrong expressions")
		}
	}
}
