package injector

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

func TestForeignValuesThatTheCLIWouldRejectAreKeptAsideAndLeftOut(t *testing.T) {
	sc := testSchema(t)
	cases := map[string]struct {
		in       string
		keep     []string // substrings that must survive
		leftOut  []string
		wholeOut bool
	}{
		"a wrong type":            {`{"model":"opus","cleanupPeriodDays":"forever"}`, []string{`"opus"`}, []string{"cleanupPeriodDays"}, false},
		"a bad enum in perms":     {`{"permissions":{"defaultMode":"yolo"},"model":"opus"}`, []string{`"opus"`}, []string{"permissions"}, false},
		"a hook the schema bans":  {`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"x","extra":1}]}]}}`, nil, []string{"hooks"}, false},
		"hooks of the wrong type": {`{"hooks":{"PreToolUse":"all"}}`, nil, nil, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, dir := openTestSession(t, []byte(tc.in))
			out, err := Ensure(s, entryAllowing(t, managedconfig.Enforce, "hooks"), sc, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
			if err := sc.Check(data); err != nil {
				t.Fatalf("the written file fails the schema (%v):\n%s", err, data)
			}
			if !strings.Contains(string(data), hookentry.Marker) {
				t.Fatal("our hook is not in the written file")
			}
			for _, k := range tc.keep {
				if !strings.Contains(string(data), k) {
					t.Errorf("valid content %s was lost:\n%s", k, data)
				}
			}
			for _, k := range tc.leftOut {
				if !strings.Contains(strings.Join(out.Invalid, " "), k) && !strings.Contains(strings.Join(out.Merge.Damaged, " "), k) {
					t.Errorf("%s not reported as left out: %+v", k, out)
				}
			}
			if aside, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(out.SetAside))); string(aside) != tc.in {
				t.Errorf("the original was not kept aside (%q): %q", out.SetAside, aside)
			}
		})
	}
}

func TestWhatStandsAtSettingsJSONIsReplacedByAValidPlainFile(t *testing.T) {
	sc := testSchema(t)
	cases := map[string]func(t *testing.T, p string){
		"a FIFO":   func(t *testing.T, p string) { syscall.Mkfifo(p, 0o600) },
		"a folder": func(t *testing.T, p string) { os.MkdirAll(filepath.Join(p, "inside"), 0o755) },
		"a huge file": func(t *testing.T, p string) {
			f, _ := os.Create(p)
			f.Truncate(1 << 30) // sparse: a gigabyte of nothing
			f.Close()
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			s, dir := openTestSession(t, nil)
			p := filepath.Join(dir, ".claude", "settings.json")
			plant(t, p)
			out, err := Ensure(s, entry(t, managedconfig.Enforce), sc, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(p)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("settings.json is not a plain file now: %v %v", fi, err)
			}
			data, _ := os.ReadFile(p)
			if err := sc.Check(data); err != nil || !strings.Contains(string(data), hookentry.Marker) {
				t.Errorf("written: %s (%v)", data, err)
			}
			if out.Replaced == "" || len(out.Tampering()) == 0 {
				t.Errorf("not reported: %+v", out)
			}
		})
	}
}

// entry is our hook entry under a configuration in mode.
func entry(t testing.TB, mode managedconfig.Mode) hookentry.Entry {
	t.Helper()
	return entryAllowing(t, mode)
}

// entryAllowing is entry with an admin's allowed_settings.
func entryAllowing(t testing.TB, mode managedconfig.Mode, allowed ...string) hookentry.Entry {
	t.Helper()
	cfg := managedconfig.Config{Mode: mode, HookTimeout: 30 * time.Second, DecisionTimeout: 10 * time.Second, MaxLineBytes: 4 << 20,
		AllowedSettings: allowed}
	e, err := hookentry.NewEntry(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func testSchema(t testing.TB) *settingsschema.Schema {
	t.Helper()
	sc, err := settingsschema.New()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func openTestSession(t *testing.T, settings []byte) (*session.Session, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "local_s")
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	if settings != nil {
		os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), settings, 0o644)
	}
	s, err := session.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func FuzzEnsureAlwaysLeavesAValidHookedFile(f *testing.F) {
	f.Add([]byte(`{"model":"opus","cleanupPeriodDays":"x"}`))
	f.Add([]byte(`{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"a"}]}]},"env":{"PATH":"/x"}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"permissions":{"allow":[1]}}`))
	sc := testSchema(f)
	e := entry(f, managedconfig.Enforce)
	f.Fuzz(func(t *testing.T, in []byte) {
		s, dir := openTestSession(t, in)
		if _, err := Ensure(s, e, sc, time.Now()); err != nil {
			t.Fatalf("Ensure: %v", err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
		if err := sc.Check(data); err != nil {
			t.Fatalf("written file fails the schema (%v):\n%s", err, data)
		}
		if hookentry.HookCommand(data) != e.Command {
			t.Fatalf("our hook is not in the written file:\n%s", data)
		}
	})
}
