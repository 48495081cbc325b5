package injector

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// settingsSchemaJSON is Claude Code's settings schema (SchemaStore), kept equal to the copy in the
// project's shared reference for the pinned CLI by a test. A settings file that fails it is
// ignored whole by the CLI, our hook included.
//
//go:embed claude-code-settings.schema.json
var settingsSchemaJSON []byte

// Schema checks settings files as Claude Code would accept them. It is safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// NewSchema compiles the embedded settings schema.
func NewSchema() (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(settingsSchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("claude-code-settings.schema.json", doc); err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	s, err := c.Compile("claude-code-settings.schema.json")
	if err != nil {
		return nil, fmt.Errorf("settings schema: %w", err)
	}
	return &Schema{s: s}, nil
}

// errWholeFile: the settings fail the schema at their top, not in one key's value.
var errWholeFile = errors.New("the settings fail the schema as a whole")

// badKeys returns the top-level keys whose values fail the schema, in file order; none when the
// settings are valid. An error means the file fails as a whole (or is not JSON).
func (sc *Schema) badKeys(data []byte) ([]string, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	err = sc.s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var keys []string
	whole := false
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if len(e.InstanceLocation) == 0 {
			whole = true
			return
		}
		if !slices.Contains(keys, e.InstanceLocation[0]) {
			keys = append(keys, e.InstanceLocation[0])
		}
	}
	walk(ve)
	if whole || len(keys) == 0 {
		return keys, fmt.Errorf("%w: %v", errWholeFile, err)
	}
	return keys, nil
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
