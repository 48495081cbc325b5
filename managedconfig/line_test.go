package managedconfig

import "testing"

func TestFieldLineFindsWhereAFieldIsWritten(t *testing.T) {
	data := []byte(`{
  "version": 1,
  "mode": "enforcee",
  "sessions_roots": [
    "~/a",
    "relative"
  ],
  "policy": {
    "rule_modes": {
      "bash.nope": "enforce"
    }
  }
}`)
	for field, want := range map[string]int{
		"version": 2, "mode": 3, "sessions_roots": 4, "sessions_roots[1]": 6, "policy.rule_modes.bash.nope": 10,
		"policy.rule_modes.missing": 9, "telemetry.path": 0, "": 0,
	} {
		if got := FieldLine(data, field); got != want {
			t.Errorf("FieldLine(%q) = %d, want %d", field, got, want)
		}
	}
	if got := FieldLine([]byte("not json"), "mode"); got != 0 {
		t.Errorf("in garbage: %d", got)
	}
}

func FuzzFieldLine(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,{"c":2}]}}`), "a.b[1].c")
	f.Add([]byte(`[`), "x")
	f.Fuzz(func(t *testing.T, data []byte, field string) {
		if n := FieldLine(data, field); n < 0 || n > len(data)+1 {
			t.Fatalf("line %d of %d bytes", n, len(data))
		}
	})
}

// Paths in managed.json may start from the user's home as ~ or $HOME; a Mac home written out is
// an absolute path like any other.
func TestHomeInPathsAsTildeOrDollarHome(t *testing.T) {
	e := Env{GOOS: "darwin", Home: "/Users/ada"}
	for in, want := range map[string]string{
		"~/x": "/Users/ada/x", "$HOME/x": "/Users/ada/x", "${HOME}/x/../y": "/Users/ada/y", "$HOME": "/Users/ada",
		"/Users/ada/z": "/Users/ada/z", "$HOMEX/y": "", "~bob/x": "", "rel/x": "",
	} {
		got, err := e.absPath(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("absPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
