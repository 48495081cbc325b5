package hookentry

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/coworkbridge/coworkbridge/session"
)

// settingsSchemaJSON is Claude Code's settings schema (SchemaStore), kept equal to the copy in the
// project's shared reference for the pinned CLI by a test. A settings file that fails it is
// ignored whole by the CLI, our hook included.
//
//go:embed claude-code-settings.schema.json
var settingsSchemaJSON []byte

// Schema checks settings files as Claude Code would accept them. It is safe for concurrent use.
//
// The validator is github.com/google/jsonschema-go, chosen for what it costs a process that never
// validates: nothing at package initialisation. Every binary that links the injector links the
// validator, the host hook included, and the hook is a process started on every tool call.
type Schema struct {
	s *jsonschema.Resolved
}

// NewSchema compiles the embedded settings schema.
func NewSchema() (*Schema, error) {
	var doc jsonschema.Schema
	if err := json.Unmarshal(settingsSchemaJSON, &doc); err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	s, err := doc.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	return &Schema{s: s}, nil
}

// errWholeFile: the settings fail the schema at their top, not in one key's value.
var errWholeFile = errors.New("the settings fail the schema as a whole")

// badKeys returns the top-level keys whose values fail the schema, in file order; none when the
// settings are valid. An error means the file fails as a whole (or is not JSON).
//
// The validator reports the first failure only, so each key is judged alone, as a document
// holding that key and nothing else: the settings schema has no constraint across keys (it
// requires none and allows any), so a key fails alone exactly when it fails in the file.
// If the file fails although no key fails alone, it fails as a whole.
func (sc *Schema) badKeys(data []byte) ([]string, error) {
	whole, err := decodeSettings(data)
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	err = sc.s.Validate(whole)
	if err == nil {
		return nil, nil
	}
	obj, ok := whole.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %v", errWholeFile, err)
	}
	var keys []string
	for _, k := range keyOrder(data) {
		if sc.s.Validate(map[string]any{k: obj[k]}) != nil {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: %v", errWholeFile, err)
	}
	return keys, nil
}

// decodeSettings reads a JSON document as the validator takes it. A number too large for a
// float64 (1e400) is not an error: it is judged as the largest float64 of its sign, a number of
// the same kind, as a validator with arbitrary precision would judge it.
func decodeSettings(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return numbersAsFloats(v), nil
}

func numbersAsFloats(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		if math.IsInf(f, 0) {
			return math.Copysign(math.MaxFloat64, f)
		}
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbersAsFloats(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbersAsFloats(e)
		}
	}
	return v
}

// keyOrder is the top-level keys of a JSON object in file order, each once (the last of a
// repeated key is the one a decoder keeps, and it is judged under that name).
func keyOrder(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// Check reports whether data is a settings document the CLI accepts, naming what fails.
func (sc *Schema) Check(data []byte) error {
	bad, err := sc.badKeys(data)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the settings schema rejects %v", bad)
	}
	return nil
}

// Conform leaves out of merged the top-level values that fail the schema, and returns their keys.
// A failing "hooks" is replaced by our group alone; a file that still fails, or fails as a whole,
// is replaced by our entry alone. The caller keeps the original aside.
func Conform(sc *Schema, merged []byte, e Entry) ([]byte, []string, error) {
	bad, err := sc.badKeys(merged)
	if err == nil && len(bad) == 0 {
		return merged, nil, nil
	}
	if err == nil {
		top, perr := parseObject(merged)
		if perr != nil {
			return nil, nil, fmt.Errorf("merge %s: %w", session.SettingsFile, perr)
		}
		for _, k := range bad {
			if k == "hooks" {
				top.set("hooks", marshal(map[string]any{"PreToolUse": []json.RawMessage{e.group()}}))
				continue
			}
			top.del(k)
		}
		fixed, ierr := indent(top.encode())
		if ierr == nil {
			if again, aerr := sc.badKeys(fixed); aerr == nil && len(again) == 0 {
				return fixed, bad, nil
			}
		}
	}
	alone, _, merr := Merge(nil, e)
	if merr != nil {
		return nil, nil, fmt.Errorf("merge %s: %w", session.SettingsFile, merr)
	}
	if again, aerr := sc.badKeys(alone); aerr != nil || len(again) > 0 {
		return nil, nil, fmt.Errorf("our own hook entry fails the settings schema (%v %v): report this to the coworkbridge maintainers", again, aerr)
	}
	return alone, []string{"(everything)"}, nil
}
