package recordcheck

import (
	"strings"
	"testing"
)

const schema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"required":["ts"],"properties":{"ts":{"type":"string","format":"date-time"}}}`

func TestCheckAssertsFormatsAndRefusesWhatIsNotARecord(t *testing.T) {
	c, err := New([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check([]byte(`{"ts":"2026-11-25T01:02:03Z"}`)); err != nil {
		t.Errorf("a valid record: %v", err)
	}
	for _, bad := range []string{`{"ts":"yesterday"}`, `{}`, `[]`, `{"ts":`} {
		if c.Check([]byte(bad)) == nil {
			t.Errorf("%s passed", bad)
		}
	}
}

func TestNewNamesABrokenSchema(t *testing.T) {
	if _, err := New([]byte(`{"type":`)); err == nil || !strings.Contains(err.Error(), "record schema") {
		t.Errorf("error %v, want one naming the record schema", err)
	}
}
