package telemetry

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// RecordSchema is the JSON Schema of a decision-log record (draft 2020-12), for the
// organisation's pipeline: shippers and SIEMs can validate what they receive.
//
//go:embed record.schema.json
var RecordSchema []byte

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(RecordSchema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("record.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("record.schema.json")
})

// CheckRecord validates one decision-log line against RecordSchema.
func CheckRecord(line []byte) error {
	s, err := compiled()
	if err != nil {
		return fmt.Errorf("record schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}
