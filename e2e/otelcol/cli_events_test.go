package shipping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// Claude Code's own events, as the real CLI 2.1.332 exported them (testdata/claude-code-logs.json,
// written by the e2e package's TestTheCLIsOwnEventsNameTheCallsCoworkbridgeRecords with
// -update-otel), pass through the Mac's collector with the Mac's name added, their own version
// left where the CLI put it, and a host the CLI claimed replaced: in the store each tool_decision
// then sits beside coworkbridge's record of the same call, on the same host.name.
func TestClaudeCodesOwnEventsArriveNamedForTheMacBesideItsRecords(t *testing.T) {
	if collectorBin == "" {
		t.Skip("no collector built")
	}
	fixture, err := os.ReadFile(filepath.Join("testdata", "claude-code-logs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exports []json.RawMessage
	if err := json.Unmarshal(fixture, &exports); err != nil || len(exports) == 0 {
		t.Fatalf("testdata/claude-code-logs.json: %d exports, %v", len(exports), err)
	}
	// The calls the CLI decided, read from its own events: coworkbridge's records of them follow.
	calls := cliDecisions(t, exports)
	if len(calls) != 2 {
		t.Fatalf("the fixture holds %d tool_decision events, want 2", len(calls))
	}

	base := t.TempDir()
	logs := filepath.Join(base, "logs")
	os.MkdirAll(logs, 0o700)
	log := telemetry.Open(telemetry.Options{Path: filepath.Join(logs, "decisions.jsonl"), Redact: true,
		Stamp: telemetry.Stamp{Host: "mac-7", User: "ada", Version: "1.4.0"}})
	for i, c := range calls {
		log.Write(telemetry.Record{TS: time.Now(), RID: fmt.Sprintf("%032x", i+1), Session: "local_0007", Tool: c.tool,
			Decision: claudehook.Allow, Input: json.RawMessage(`{}`), ToolUseID: c.id, CLISessionID: c.session, CLIVersion: "2.1.332"})
	}
	log.Close()
	listen := freeAddr(t)
	sink := newSink(t)
	startCollector(t, logs, filepath.Join(base, "storage"), sink.srv.URL, "COWORKBRIDGE_HOST=mac-7", "CLAUDE_CODE_OTLP_LISTEN="+listen)

	// One export claims a host of its own, as OTEL_RESOURCE_ATTRIBUTES in the agent's environment would.
	exports[0] = claimHost(t, exports[0], "somewhere-else")
	for _, e := range exports {
		postExport(t, "http://"+listen+"/v1/logs", e)
	}

	cliEvents := 0
	for _, e := range exports {
		cliEvents += len(cliRecords(t, e))
	}
	var got []received
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got = sink.records()
		if len(got) >= cliEvents+len(calls) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ours := map[string]received{} // coworkbridge's records by tool_use_id
	var theirs []received
	for _, r := range got {
		switch r.resource["service.name"] {
		case "coworkbridge":
			ours[fmt.Sprint(r.attrs["tool_use_id"])] = r
		case "claude-code":
			theirs = append(theirs, r)
		}
	}
	if len(theirs) != cliEvents || len(ours) != len(calls) {
		t.Fatalf("%d of the CLI's %d events and %d of %d records arrived", len(theirs), cliEvents, len(ours), len(calls))
	}
	var joined []string
	for _, r := range theirs {
		if r.resource["host.name"] != "mac-7" {
			t.Errorf("the CLI's %s event arrived with host.name %v, want the Mac's mac-7", r.body, r.resource["host.name"])
		}
		if r.resource["service.version"] != "2.1.332" {
			t.Errorf("the CLI's %s event lost its own version: service.version %v", r.body, r.resource["service.version"])
		}
		if r.attrs["event.name"] != "tool_decision" {
			continue
		}
		rec, ok := ours[fmt.Sprint(r.attrs["tool_use_id"])]
		if !ok || rec.resource["host.name"] != r.resource["host.name"] || rec.attrs["session.id"] != r.attrs["session.id"] {
			t.Errorf("the CLI's decision on %v has no record beside it on the same host and session: %+v", r.attrs["tool_use_id"], rec)
			continue
		}
		joined = append(joined, fmt.Sprintf("%v %v/%v", r.attrs["tool_name"], r.attrs["decision"], rec.attrs["coworkbridge.decision"]))
	}
	slices.Sort(joined)
	if !slices.Equal(joined, []string{"Bash reject/allow", "Write accept/allow"}) {
		t.Errorf("joined %v", joined)
	}
}

type cliCall struct{ id, tool, session string }

// cliRecords is the log records of one OTLP/JSON export, their attributes flattened to strings.
func cliRecords(t *testing.T, export json.RawMessage) []map[string]string {
	t.Helper()
	var req struct {
		ResourceLogs []struct {
			ScopeLogs []struct {
				LogRecords []struct {
					Attributes []struct {
						Key   string `json:"key"`
						Value struct {
							String string `json:"stringValue"`
						} `json:"value"`
					} `json:"attributes"`
				} `json:"logRecords"`
			} `json:"scopeLogs"`
		} `json:"resourceLogs"`
	}
	if err := json.Unmarshal(export, &req); err != nil {
		t.Fatalf("an export of the fixture: %v", err)
	}
	var out []map[string]string
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				m := map[string]string{}
				for _, a := range lr.Attributes {
					m[a.Key] = a.Value.String
				}
				out = append(out, m)
			}
		}
	}
	return out
}

func cliDecisions(t *testing.T, exports []json.RawMessage) []cliCall {
	var out []cliCall
	for _, e := range exports {
		for _, a := range cliRecords(t, e) {
			if a["event.name"] == "tool_decision" {
				out = append(out, cliCall{id: a["tool_use_id"], tool: a["tool_name"], session: a["session.id"]})
			}
		}
	}
	return out
}

// claimHost returns the export with host.name set in each of its resources.
func claimHost(t *testing.T, export json.RawMessage, host string) json.RawMessage {
	t.Helper()
	var req map[string][]map[string]any
	if err := json.Unmarshal(export, &req); err != nil {
		t.Fatal(err)
	}
	for _, rl := range req["resourceLogs"] {
		res, _ := rl["resource"].(map[string]any)
		attrs, _ := res["attributes"].([]any)
		res["attributes"] = append(attrs, map[string]any{"key": "host.name", "value": map[string]any{"stringValue": host}})
	}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// postExport sends one OTLP/JSON export as the CLI does, waiting for the receiver to listen.
func postExport(t *testing.T, url string, export json.RawMessage) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Post(url, "application/json", bytes.NewReader(export))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("the collector refused the CLI's export: %s", resp.Status)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector does not take the CLI's events at %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
