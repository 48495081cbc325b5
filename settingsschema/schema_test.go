package settingsschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"

	refschema "github.com/santhosh-tekuri/jsonschema/v6"
)

// The reference copy lives in the project's shared reference folder beside the checkout.
const schemaPath = "../../shared/reference/claude-code-settings.schema.json"

func testSchema(t testing.TB) *Schema {
	t.Helper()
	sc, err := New()
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
		t.Error("settingsschema/claude-code-settings.schema.json differs from the shared reference: copy it over")
	}
}

// referenceBadKeys is BadKeys by a second, independent validator (the one the settings tests use),
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
	files, _ := filepath.Glob(filepath.Join("..", "hookentry", "testdata", "settings", "*.json"))
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
	return cbtest.ReferenceSchema(t, settingsSchemaJSON)
}

// The validator linked into coworkbridge and the reference validator name the same failing keys
// for every key and kind of value, so that the change of library changed no judgement.
func TestSchemaNamesTheSameBadKeysAsTheReferenceValidator(t *testing.T) {
	sc, ref := testSchema(t), referenceSchema(t)
	failing := 0
	for _, p := range schemaProbes(t) {
		got, err := sc.BadKeys(p)
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
		got, err := sc.BadKeys(in)
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

// managed.json's allowed_settings knows Claude Code's hook events by managedconfig.HookEvents:
// exactly the events of the pinned release's settings schema.
func TestManagedConfigKnowsTheSchemasHookEvents(t *testing.T) {
	var doc struct {
		Properties struct {
			Hooks struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"hooks"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(settingsSchemaJSON, &doc); err != nil {
		t.Fatal(err)
	}
	events := slices.Sorted(maps.Keys(doc.Properties.Hooks.Properties))
	if !slices.Equal(events, slices.Sorted(slices.Values(managedconfig.HookEvents))) {
		t.Errorf("managedconfig.HookEvents %q, the schema's %q", managedconfig.HookEvents, events)
	}
}
