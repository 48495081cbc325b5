package e2e

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

var updateOTel = flag.Bool("update-otel", false, "rewrite e2e/otelcol/testdata/claude-code-logs.json from the real CLI's export")

// otlpSink is an OTLP/HTTP logs endpoint taking JSON (the CLI's http/json protocol): it keeps
// each export request as sent.
type otlpSink struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []json.RawMessage
}

func newOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil || r.URL.Path != "/v1/logs" {
			w.WriteHeader(http.StatusOK) // metrics and traces are not asked for; take and drop
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, data)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// otlpLog is one log record of an OTLP/JSON export, flattened: its resource's and its own
// attributes as strings.
type otlpLog struct {
	Body     string
	Attrs    map[string]string
	Resource map[string]string
}

type otlpKV struct {
	Key   string `json:"key"`
	Value struct {
		String *string          `json:"stringValue"`
		Int    *json.RawMessage `json:"intValue"`
		Bool   *bool            `json:"boolValue"`
		Double *float64         `json:"doubleValue"`
	} `json:"value"`
}

func (kv otlpKV) text() string {
	switch v := kv.Value; {
	case v.String != nil:
		return *v.String
	case v.Int != nil:
		var s string
		if json.Unmarshal(*v.Int, &s) == nil {
			return s
		}
		return string(*v.Int)
	case v.Bool != nil:
		return map[bool]string{true: "true", false: "false"}[*v.Bool]
	case v.Double != nil:
		b, _ := json.Marshal(*v.Double)
		return string(b)
	}
	return ""
}

func flatten(kvs []otlpKV) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.text()
	}
	return m
}

func (s *otlpSink) logs(t *testing.T) []otlpLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []otlpLog
	for _, raw := range s.reqs {
		var req struct {
			ResourceLogs []struct {
				Resource struct {
					Attributes []otlpKV `json:"attributes"`
				} `json:"resource"`
				ScopeLogs []struct {
					LogRecords []struct {
						Body struct {
							String string `json:"stringValue"`
						} `json:"body"`
						Attributes []otlpKV `json:"attributes"`
					} `json:"logRecords"`
				} `json:"scopeLogs"`
			} `json:"resourceLogs"`
		}
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Fatalf("the CLI's export is not OTLP/JSON: %v: %.300s", err, raw)
		}
		for _, rl := range req.ResourceLogs {
			res := flatten(rl.Resource.Attributes)
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					out = append(out, otlpLog{Body: lr.Body.String, Attrs: flatten(lr.Attributes), Resource: res})
				}
			}
		}
	}
	return out
}

// The facts the shipped collector configuration rests on, with the real CLI exporting its own
// OpenTelemetry events beside the host hook's records: each tool call's tool_decision event
// carries the tool_use_id that coworkbridge's record of the same call carries (so a store joins
// them), the CLI names its version service.version (so coworkbridge's version needs a name of its
// own), and its events carry no host.name (so the Mac's collector must add it).
func TestTheCLIsOwnEventsNameTheCallsCoworkbridgeRecords(t *testing.T) {
	dir, logDir, env := hostHookedProject(t)
	api := newFakeAPI(t,
		[]toolUse{{Name: "Bash", Input: map[string]any{"command": "git push --force origin main", "description": "push"}}},
		[]toolUse{{Name: "Write", Input: map[string]any{"file_path": filepath.Join(dir, "outputs", "ok.txt"), "content": "fine\n"}}},
	)
	sink := newOTLPSink(t)
	runCLI(t, api, dir, append(env, "DISABLE_TELEMETRY=", "CLAUDE_CODE_ENABLE_TELEMETRY=1", "OTEL_LOGS_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=none",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/json", "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.srv.URL, "OTEL_LOGS_EXPORT_INTERVAL=200")...)

	records := map[string]map[string]any{} // by tool_use_id
	f, err := os.Open(filepath.Join(logDir, "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			if id, _ := rec["tool_use_id"].(string); id != "" {
				records[id] = rec
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var decisions []otlpLog
	for time.Now().Before(deadline) {
		decisions = decisions[:0]
		for _, l := range sink.logs(t) {
			if l.Attrs["event.name"] == "tool_decision" {
				decisions = append(decisions, l)
			}
		}
		if len(decisions) >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(decisions) < 2 {
		for _, l := range sink.logs(t) {
			t.Logf("%q %v %v", l.Body, l.Attrs, l.Resource)
		}
		t.Fatalf("%d tool_decision events from the CLI, want 2", len(decisions))
	}
	var joined []string
	for _, d := range decisions {
		rec, ok := records[d.Attrs["tool_use_id"]]
		if !ok {
			t.Errorf("the CLI's %s decision (tool_use_id %q) has no coworkbridge record of that id; records: %v", d.Attrs["tool_name"], d.Attrs["tool_use_id"], slices.Sorted(maps.Keys(records)))
			continue
		}
		joined = append(joined, d.Attrs["tool_name"]+"="+rec["decision"].(string))
		if d.Attrs["session.id"] != rec["cli_session_id"] {
			t.Errorf("session.id %q beside cli_session_id %v", d.Attrs["session.id"], rec["cli_session_id"])
		}
		if _, has := d.Resource["host.name"]; has {
			t.Errorf("the CLI now names its host (%q): the collector's host detection may be dropped", d.Resource["host.name"])
		}
		if d.Resource["service.version"] != cliVersion {
			t.Errorf("the CLI's service.version is %q, want its own version %s", d.Resource["service.version"], cliVersion)
		}
	}
	if !slices.Equal(joined, []string{"Bash=deny", "Write=allow"}) {
		t.Errorf("joined %v, want the Bash call denied and the Write allowed", joined)
	}
	if *updateOTel {
		// The export as the CLI sent it, for e2e/otelcol's test of the shipped configuration.
		sink.mu.Lock()
		data, err := json.MarshalIndent(sink.reqs, "", " ")
		sink.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("otelcol", "testdata", "claude-code-logs.json"), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
