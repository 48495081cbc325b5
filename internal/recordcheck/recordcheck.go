// Package recordcheck validates decision-log lines against the record schema that telemetry
// ships for organisations' pipelines, with a validator that also asserts formats (date-time),
// as a strict consumer would.
//
// It is for tests and harnesses only, and it takes the schema as bytes so that telemetry's own
// tests can use it: no coworkbridge binary links it, because the validator it uses compiles every
// JSON Schema draft's meta-schema when a process starts, a cost the host hook, a process started
// on every tool call, must not pay.
package recordcheck

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Checker validates records against one schema. It is safe for concurrent use.
type Checker struct {
	s *jsonschema.Schema
}

// New compiles schema (telemetry.RecordSchema).
func New(schema []byte) (*Checker, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("record schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("record.schema.json", doc); err != nil {
		return nil, fmt.Errorf("record schema: %w", err)
	}
	s, err := c.Compile("record.schema.json")
	if err != nil {
		return nil, fmt.Errorf("record schema: %w", err)
	}
	return &Checker{s: s}, nil
}

// Check validates one decision-log line.
func (c *Checker) Check(line []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := c.s.Validate(v); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
