// Package settingsschema is Claude Code's settings schema, as the pinned release's CLI accepts a
// settings file: it names the top-level keys whose values fail it. A settings file that fails the
// schema is ignored whole by the CLI, our hook included, so nothing coworkbridge writes into a
// settings file or a managed-settings drop-in may fail it.
//
// It is a package of its own so that the host hook programs do not link a schema validator: they
// judge settings without validating them, and a validator's package initialisation would be paid
// on every tool call. It reads and writes no file.
package settingsschema

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
)

// settingsSchemaJSON is Claude Code's settings schema (SchemaStore), kept equal to the copy in the
// project's shared reference for the pinned CLI by a test. A settings file that fails it is
// ignored whole by the CLI, our hook included.
//
//go:embed claude-code-settings.schema.json
var settingsSchemaJSON []byte

// Schema checks settings files as Claude Code would accept them. It is safe for concurrent use.
//
// The validator is github.com/google/jsonschema-go: github.com/santhosh-tekuri/jsonschema/v6 (the
// tests' reference) allocates about 21,000 objects at package initialisation, this one about 300.
type Schema struct {
	s *jsonschema.Resolved
}

// New compiles the embedded settings schema.
func New() (*Schema, error) {
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

// ErrWholeFile: the settings fail the schema at their top, not in one key's value.
var ErrWholeFile = errors.New("the settings fail the schema as a whole")

// BadKeys returns the top-level keys whose values fail the schema, in file order; none when the
// settings are valid. An error means the file fails as a whole (or is not JSON).
//
// The validator reports the first failure only, so each key is judged alone, as a document
// holding that key and nothing else: the settings schema has no constraint across keys (it
// requires none and allows any), so a key fails alone exactly when it fails in the file.
// If the file fails although no key fails alone, it fails as a whole.
func (sc *Schema) BadKeys(data []byte) ([]string, error) {
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
		return nil, fmt.Errorf("%w: %v", ErrWholeFile, err)
	}
	var keys []string
	for _, k := range keyOrder(data) {
		if sc.s.Validate(map[string]any{k: obj[k]}) != nil {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: %v", ErrWholeFile, err)
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
	bad, err := sc.BadKeys(data)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the settings schema rejects %v", bad)
	}
	return nil
}
