package cbtest

import (
	"bytes"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ReferenceSchema compiles a JSON Schema document with the tests' reference validator
// (github.com/santhosh-tekuri/jsonschema/v6, which reports every failure with its place), for a
// test that holds what coworkbridge writes, or its own validator, to a second opinion.
func ReferenceSchema(tb testing.TB, schema []byte) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
