package injector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
	refschema "github.com/santhosh-tekuri/jsonschema/v6"
)

func testSchema(t testing.TB) *Schema {
	t.Helper()
	sc, err := NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The embedded schema is the one kept in the shared reference for the pinned CLI.
func TestTheEmbeddedSettingsSchemaIsTheReferenceCopy(t *testing.T) {
	ref, err := os.ReadFile(schemaPath)
	if err != nil {
		cbtest.NoShared(t, "the reference settings schema", err)
	}
	if !bytes.Equal(ref, settingsSchemaJSON) {
		t.Error("injector/claude-code-settings.schema.json differs from the shared reference: copy it over")
	}
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
			if bad, err := sc.badKeys(data); err != nil || len(bad) > 0 {
				t.Fatalf("the written file fails the schema (%v %v):\n%s", bad, err, data)
			}
			if !strings.Contains(string(data), Marker) {
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
			if bad, err := sc.badKeys(data); err != nil || len(bad) > 0 || !strings.Contains(string(data), Marker) {
				t.Errorf("written: %s (%v %v)", data, bad, err)
			}
			if out.Replaced == "" || len(out.Tampering()) == 0 {
				t.Errorf("not reported: %+v", out)
			}
		})
	}
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
		if bad, err := sc.badKeys(data); err != nil || len(bad) > 0 {
			t.Fatalf("written file fails the schema (%v %v):\n%s", bad, err, data)
		}
		if HookCommand(data) != e.Command {
			t.Fatalf("our hook is not in the written file:\n%s", data)
		}
	})
}

// referenceBadKeys is badKeys by a second, independent validator (the one the settings tests use),
// which reports every failure with its place.
func referenceBadKeys(t testing.TB, s *refschema.Schema, data []byte) (keys []string, whole bool) {
	t.Helper()
	v, err := refschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, true
	}
	err = s.Validate(v)
	var ve *refschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return nil, err != nil
	}
	var walk func(e *refschema.ValidationError)
	walk = func(e *refschema.ValidationError) {
		for _, c := range e.Causes {
			walk(c)
		}
		if len(e.Causes) > 0 {
			return
		}
		if len(e.InstanceLocation) == 0 {
			// A property name that fails propertyNames is reported at the top; its key is the
			// one whose schema says propertyNames.
			if k, ok := propertyNamesKey(e.SchemaURL); ok {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
				return
			}
			whole = true
		} else if !slices.Contains(keys, e.InstanceLocation[0]) {
			keys = append(keys, e.InstanceLocation[0])
		}
	}
	walk(ve)
	return keys, whole
}

// schemaProbes are settings documents that give every key the schema knows a value of every JSON
// kind, one key at a time and all keys together, plus the fixtures.
func schemaProbes(t testing.TB) [][]byte {
	t.Helper()
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(settingsSchemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	kinds := []string{`"x"`, `1`, `1.5`, `true`, `null`, `[]`, `["x"]`, `{}`, `{"x":"y"}`, `[{"matcher":"*","hooks":[{"type":"command","command":"x"}]}]`}
	var probes [][]byte
	for _, kind := range kinds {
		var all []string
		for _, k := range slices.Sorted(maps.Keys(doc.Properties)) {
			one := fmt.Sprintf(`%q:%s`, k, kind)
			all = append(all, one)
			probes = append(probes, []byte("{"+one+"}"))
		}
		probes = append(probes, []byte("{"+strings.Join(all, ",")+"}"))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "settings", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		probes = append(probes, data)
	}
	return append(probes, []byte(`[]`), []byte(`"settings"`), []byte(`{"model":"opus","model":5}`))
}

func referenceSchema(t testing.TB) *refschema.Schema {
	t.Helper()
	return compileReference(t, settingsSchemaJSON)
}

// compileReference compiles a settings schema with the reference validator.
func compileReference(t testing.TB, schema []byte) *refschema.Schema {
	t.Helper()
	doc, err := refschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := refschema.NewCompiler()
	if err := c.AddResource("settings.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("settings.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The validator linked into coworkbridge and the reference validator name the same failing keys
// for every key and kind of value, so that the change of library changed no judgement.
func TestSchemaNamesTheSameBadKeysAsTheReferenceValidator(t *testing.T) {
	sc, ref := testSchema(t), referenceSchema(t)
	failing := 0
	for _, p := range schemaProbes(t) {
		got, err := sc.badKeys(p)
		want, whole := referenceBadKeys(t, ref, p)
		if whole != (err != nil) || (!whole && !sameKeys(got, want)) {
			t.Errorf("%s:\n got %v (error %v)\nwant %v (whole %v)", p, got, err, want, whole)
		}
		if len(got) > 0 {
			failing++
		}
	}
	if failing == 0 {
		t.Fatal("no probe fails the schema: the probes test nothing")
	}
}

func FuzzSchemaNamesTheSameBadKeysAsTheReferenceValidator(f *testing.F) {
	sc, ref := testSchema(f), referenceSchema(f)
	for _, p := range schemaProbes(f)[:40] {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		got, err := sc.badKeys(in)
		want, whole := referenceBadKeys(t, ref, in)
		if whole != (err != nil) || (!whole && !sameKeys(got, want)) {
			t.Fatalf("%s:\n got %v (error %v)\nwant %v (whole %v)", in, got, err, want, whole)
		}
	})
}

func propertyNamesKey(schemaURL string) (string, bool) {
	_, frag, _ := strings.Cut(schemaURL, "#/properties/")
	k, rest, ok := strings.Cut(frag, "/")
	return k, ok && strings.HasPrefix(rest, "propertyNames")
}

// sameKeys: the reference validator reports in no particular order.
func sameKeys(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
