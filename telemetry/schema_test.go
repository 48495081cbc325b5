package telemetry

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/internal/recordcheck"
)

// Every record the log writes, whatever its transport, decision and input setting, is valid
// against the schema shipped for the organisation's pipeline; and the schema does refuse what
// is not a record.
func TestRecordsTheLogWritesMatchTheSchema(t *testing.T) {
	stamp := Stamp{Host: "mac-17", User: "ada", Version: "1.4.0", ConfigHash: "9b3885cd4de9", ConfigOrigin: "file"}
	for _, inputs := range []string{"", InputsAll, InputsMetadata, InputsNone} {
		path := filepath.Join(t.TempDir(), "d.jsonl")
		l := Open(Options{Path: path, MaxFiles: 2, Redact: true, Inputs: inputs, Stamp: stamp})
		recs := []Record{
			{TS: time.Now(), RID: strings.Repeat("a", 32), Session: "local_1", Agent: "cowork", Transport: TransportSpool, Mode: "enforce",
				Enforced: true, Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf /","token":"ghp_` + strings.Repeat("x", 36) + `"}`),
				Decision: "deny", Rule: "bash.rm-critical", Reason: "why", LatencyUS: 812},
			{TS: time.Now(), RID: strings.Repeat("b", 32), Session: "local_1", Agent: "claude-code", Transport: TransportHook, Mode: "observe",
				Tool: "Read", Input: json.RawMessage(`{"file_path":"/p/a.go"}`), Decision: "allow"},
			{TS: time.Now(), Session: "local_1", Agent: "cowork", Transport: TransportTranscript, Mode: "enforce", Tool: "Write", Decision: "ask", Rule: "path.dotenv"},
			{TS: time.Now(), RID: strings.Repeat("c", 32), Session: "local_1", Agent: "claude-code", Transport: TransportSocket, Mode: "enforce",
				Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://x.example/?d=1"}`), Decision: "ask", Rule: "flow.untrusted-private-send",
				Flow: []string{"took in web:issues.example (WebFetch toolu_1)", "read ~/p/.env (Read toolu_2)", "sends to x.example (WebFetch toolu_3)"}},
			{TS: time.Now(), RID: strings.Repeat("d", 32), Session: "local_1", Agent: "claude-code", Transport: TransportDropped, Mode: "observe",
				Tool: "Read", Input: json.RawMessage(`{"file_path":"/p/b.go"}`), Decision: "allow"},
		}
		if err := l.WriteBatch(recs); err != nil {
			t.Fatal(err)
		}
		l.Close()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			if err := checkRecord(line); err != nil {
				t.Errorf("inputs=%q: %v\n%s", inputs, err, line)
			}
			var r Record
			json.Unmarshal(line, &r)
			if r.Schema != SchemaVersion || r.Host != "mac-17" || r.User != "ada" || r.ConfigHash != "9b3885cd4de9" {
				t.Errorf("record does not describe itself: %s", line)
			}
		}
	}
	for _, bad := range []string{`{}`, `{"schema":1}`, `not json`} {
		if checkRecord([]byte(bad)) == nil {
			t.Errorf("%s passed the schema", bad)
		}
	}
}

// With telemetry.inputs, what is kept of a call nothing objected to shrinks; a deny or an ask
// keeps its input whatever the setting.
func TestTheInputsSettingKeepsDeniesAndAsksWhole(t *testing.T) {
	in := json.RawMessage(`{"command":"ls -la","description":"list"}`)
	for _, tt := range []struct {
		inputs, decision, want, omitted string
	}{
		{InputsAll, "allow", `{"command":"ls -la","description":"list"}`, ""},
		{InputsMetadata, "allow", `{"keys":["command","description"],"bytes":41}`, "metadata"},
		{InputsNone, "allow", `null`, "none"},
		{InputsNone, "deny", `{"command":"ls -la","description":"list"}`, ""},
		{InputsMetadata, "ask", `{"command":"ls -la","description":"list"}`, ""},
	} {
		l := Open(Options{Path: filepath.Join(t.TempDir(), "d.jsonl"), Inputs: tt.inputs})
		line, err := l.Encode(Record{Tool: "Bash", Input: in, Decision: claudehook.Decision(tt.decision)})
		if err != nil {
			t.Fatal(err)
		}
		var r Record
		json.Unmarshal(line, &r)
		if string(r.Input) != tt.want || r.InputOmitted != tt.omitted {
			t.Errorf("inputs=%s %s: input %s omitted %q, want %s %q", tt.inputs, tt.decision, r.Input, r.InputOmitted, tt.want, tt.omitted)
		}
	}
}

// The sample log shipped for admins to try report and replay on is a valid log.
func TestTheSampleLogInDeployMatchesTheSchema(t *testing.T) {
	data, err := os.ReadFile("../deploy/examples/decisions.sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range bytes.Lines(data) {
		n++
		if err := checkRecord(line); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
	}
	if n < 100 {
		t.Errorf("only %d records", n)
	}
}

var recordChecker = sync.OnceValues(func() (*recordcheck.Checker, error) { return recordcheck.New(RecordSchema) })

// checkRecord validates one decision-log line against RecordSchema, as a strict pipeline would.
func checkRecord(line []byte) error {
	c, err := recordChecker()
	if err != nil {
		return err
	}
	return c.Check(line)
}
