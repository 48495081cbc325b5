package telemetry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// reference is how the log wrote a record before it wrote them by hand: the bytes must not change.
func reference(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json refuses %#v: %v", v, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// awkward are strings whose quoting differs between careless encoders.
var awkward = []string{
	"",
	"plain",
	`quote " and backslash \ and slash /`,
	"controls \x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f",
	"html <script>&amp;</script>",
	"invalid \xff\xfe utf-8 \xc3 cut \xe2\x80",
	"separators \u2028 and \u2029, and their neighbours \u2027 \u202a",
	"wide 日本語 and emoji 🙂 and combining e\u0301",
	"surrogate half \xed\xa0\x80",
}

func fullRecord(s string) Record {
	return Record{
		Prev: strings.Repeat("ab", hashLen), Schema: SchemaVersion, TS: time.Date(2026, 11, 25, 10, 4, 5, 123456789, time.UTC),
		RID: s, Session: s, Agent: s, Transport: s, Mode: s, Enforced: true, Tool: s,
		Input: json.RawMessage(`{"command":"ls"}`), Cwd: s, Decision: "deny", Rule: s, Reason: s, Matched: s, Nudge: s,
		Effects: []string{s, "second " + s}, LatencyUS: -42, Host: s, User: s, Version: s, ConfigHash: s, ConfigOrigin: s,
		InputOmitted: s,
	}
}

func TestRecordsAreWrittenAsEncodingJSONWritesThem(t *testing.T) {
	for _, s := range awkward {
		cases := map[string]Record{
			"every field":    fullRecord(s),
			"omitted fields": {Schema: SchemaVersion, RID: s, Tool: s, Input: json.RawMessage("null"), Decision: "allow"},
			"zero time":      {Input: json.RawMessage(`"x"`)},
			"local time":     {TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 5*3600+30*60)), Input: json.RawMessage("1")},
			"empty effects":  {Effects: []string{}, Input: json.RawMessage("[]")},
		}
		for name, r := range cases {
			got, err := appendRecord(nil, &r)
			if err != nil {
				t.Fatalf("%s %q: %v", name, s, err)
			}
			if want := reference(t, r); !bytes.Equal(got, want) {
				t.Errorf("%s %q:\n got %s\nwant %s", name, s, got, want)
			}
		}
	}
}

func TestInputsAreReencodedAsEncodingJSONWritesThem(t *testing.T) {
	inputs := []string{
		`{"command":"ls -la","description":"list"}`,
		`{"z":1,"a":[1,2.5,-3e10,0.0,1E+2],"m":{"b":null,"a":true,"c":false},"":"empty key"}`,
		`{"nested":{"deep":{"deeper":[[],[{}],{"x":"<&>"}]}}}`,
		`[1,"two",null]`,
		`"just a string"`,
		`12345678901234567890123456789`,
		`{"keys sort by bytes":{"b":1,"B":2,"ä":3,"a":4,"_":5}}`,
		"{\"bad utf-8 \xff\":\"\xfe\",\"sep\":\"\u2028\"}",
		`not json at all`,
		`{"unfinished":`,
	}
	for _, s := range awkward {
		b, _ := json.Marshal(map[string]string{s: s})
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		for _, redact := range []bool{false, true} {
			got := sanitizeInput(json.RawMessage(in), redact)
			if want := referenceSanitized(t, in, redact); !bytes.Equal(got, want) {
				t.Errorf("input %q (redact %v):\n got %s\nwant %s", in, redact, got, want)
			}
		}
	}
}

// referenceSanitized is sanitizeInput as it was, with encoding/json writing the result.
func referenceSanitized(t testing.TB, in string, redact bool) []byte {
	var v any
	dec := json.NewDecoder(strings.NewReader(in))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		v = in
	}
	return reference(t, sanitize(v, redact, false))
}

func TestAValueEncodingJSONRefusesIsRefused(t *testing.T) {
	for name, v := range map[string]any{
		"bad number": json.Number("1.2.3"),
		"bad nested": map[string]any{"a": []any{json.Number("01")}},
		"other type": struct{}{},
	} {
		if got, err := appendValue(nil, v); err == nil {
			t.Errorf("%s: written as %s", name, got)
		}
	}
	if got, err := appendValue(nil, json.Number("")); err != nil || string(got) != "0" {
		t.Errorf("an empty number is written as %q, %v; encoding/json writes 0", got, err)
	}
}

func TestATimeOutsideRFC3339IsRefused(t *testing.T) {
	for _, ts := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		r := Record{TS: ts, Input: json.RawMessage("null")}
		if got, err := appendRecord(nil, &r); err == nil {
			t.Errorf("%v written as %s", ts, got)
		}
	}
}

func TestNumbersAreCheckedAsJSONGrammarSays(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12": true, "1.5": true, "-1.5e-7": true, "1E+2": true, "0.0": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "1e+": false, "+1": false,
		"1.5.": false, "0x10": false, "NaN": false, " 1": false,
	} {
		if got := isNumber(s); got != want {
			t.Errorf("isNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzEncodingMatchesEncodingJSON(f *testing.F) {
	for _, s := range awkward {
		f.Add([]byte(`{"command":"`+s+`"}`), s, int64(len(s)))
	}
	f.Add([]byte(`{"a":[1,2,{"b":null}],"c":1e5}`), "x", int64(0))
	f.Fuzz(func(t *testing.T, input []byte, s string, n int64) {
		for _, redact := range []bool{false, true} {
			got := sanitizeInput(input, redact)
			if want := referenceSanitized(t, string(input), redact); !bytes.Equal(got, want) {
				t.Fatalf("input %q (redact %v):\n got %s\nwant %s", input, redact, got, want)
			}
		}
		r := fullRecord(s)
		r.LatencyUS, r.Input = n, sanitizeInput(input, false)
		got, err := appendRecord(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		if want := reference(t, r); !bytes.Equal(got, want) {
			t.Fatalf("record with %q:\n got %s\nwant %s", s, got, want)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	l := Open(Options{Path: b.TempDir() + "/d.jsonl", Redact: true})
	defer l.Close()
	r := Record{TS: time.Now(), RID: "0123456789abcdef0123456789abcdef", Session: "local_x", Agent: "cowork",
		Transport: TransportSpool, Mode: "enforce", Tool: "Bash", Decision: "allow",
		Input: json.RawMessage(`{"command":"git status && npm test -- --watch=false","description":"run tests"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Encode(r); err != nil {
			b.Fatal(err)
		}
	}
}
