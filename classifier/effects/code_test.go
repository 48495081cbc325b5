package effects

import (
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
)

func FuzzScanCode(f *testing.F) {
	for _, s := range []string{`import shutil; shutil.rmtree("/")`, `exec(base64.b64decode('cHJpbnQoMSk='))`, `fetch('x',{method:'POST',body:process.env})`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		a := facts.Analyze("python3 -c " + shellQuote(code))
		_ = AnalysisEffects(a, "/p", NewFlow(a, "/p", func(string) bool { return false }))
	})
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
