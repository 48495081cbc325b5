// Package shipping tests deploy/shipping/otelcol/config.yaml with a real OpenTelemetry
// Collector: records written by coworkbridge's own writer, through rotations and collector
// restarts, must all arrive at an OTLP endpoint, each exactly as written and mapped as the
// configuration says. It is a module of its own, so that coworkbridge's module links none of the
// collector.
package shipping

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

var collectorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "otelcol-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	collectorBin = filepath.Join(dir, "otelcol")
	out, err := exec.Command("go", "build", "-o", collectorBin, "./collector").CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("cannot build the OpenTelemetry Collector: %v\n%s", err, out)
		if os.Getenv("COWORKBRIDGE_OTELCOL") == "require" {
			fmt.Fprintln(os.Stderr, msg)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "skipping:", msg)
		collectorBin = ""
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// received is one OTLP log record as the endpoint got it.
type received struct {
	body     string
	attrs    map[string]any
	resource map[string]any
	severity plog.SeverityNumber
	ts       time.Time
}

// sink is an OTLP/HTTP logs endpoint on 127.0.0.1.
type sink struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []received
}

func newSink(t *testing.T) *sink {
	s := &sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []received
	rls := req.Logs().ResourceLogs()
	for i := range rls.Len() {
		rl := rls.At(i)
		res := rl.Resource().Attributes().AsRaw()
		sls := rl.ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				lr := lrs.At(k)
				got = append(got, received{body: lr.Body().AsString(), attrs: lr.Attributes().AsRaw(), resource: res,
					severity: lr.SeverityNumber(), ts: lr.Timestamp().AsTime()})
			}
		}
	}
	s.mu.Lock()
	s.got = append(s.got, got...)
	s.mu.Unlock()
	out, _ := plogotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (s *sink) records() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// collector is the collector running the shipped configuration.
type collector struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startCollector starts the shipped configuration on logs. Claude Code's events are taken on a
// port of the system's choosing unless env names one (CLAUDE_CODE_OTLP_LISTEN), and the Mac is
// "test-mac" unless env names it (COWORKBRIDGE_HOST).
func startCollector(t *testing.T, logs, storage, endpoint string, env ...string) *collector {
	t.Helper()
	config, err := filepath.Abs(filepath.Join("..", "..", "deploy", "shipping", "otelcol", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{cmd: exec.Command(collectorBin, "--config", config)}
	c.cmd.Env = append(os.Environ(), "COWORKBRIDGE_LOGS="+logs, "OTELCOL_STORAGE="+storage, "OTLP_ENDPOINT="+endpoint,
		"CLAUDE_CODE_OTLP_LISTEN=127.0.0.1:0", "COWORKBRIDGE_HOST=test-mac")
	c.cmd.Env = append(c.cmd.Env, env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			t.Logf("collector output:\n%s", tail(c.out.String(), 4000))
		}
	})
	return c
}

func (c *collector) stop() {
	if c.cmd.ProcessState != nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.cmd.Wait()
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// Every record written through rotations, collector restarts and a stretch with the collector
// down arrives at the OTLP endpoint: the body the line exactly as written (so the chain verifies
// at the other end), the time the record's, the severity by verdict, Claude Code's attribute names
// where they name the same thing, and the Mac as the resource. Duplicates (a restart may send the
// last batch again) are counted: a store drops them on host.name + coworkbridge.rid.
func TestTheShippedCollectorConfigurationDeliversEveryRecordMappedAndWhole(t *testing.T) {
	if collectorBin == "" {
		t.Skip("no collector built")
	}
	base := t.TempDir()
	logs, storage := filepath.Join(base, "logs"), filepath.Join(base, "storage")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	s := newSink(t)
	logPath := filepath.Join(logs, "decisions.jsonl")
	log := telemetry.Open(telemetry.Options{Path: logPath, MaxFileBytes: 48 << 10, MaxFiles: 60, Redact: true,
		Stamp: telemetry.Stamp{Host: "mac-1", User: "alex", Version: "1.2.3", ConfigHash: "abc123", ConfigOrigin: "file"}})
	defer log.Close()
	daemonLog, err := os.OpenFile(filepath.Join(logs, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer daemonLog.Close()
	written, beats := 0, 0
	write := func(n int, pace time.Duration) {
		for range n {
			written++
			d := []claudehook.Decision{claudehook.Allow, claudehook.Allow, claudehook.Ask, claudehook.Deny}[written%4]
			rec := telemetry.Record{TS: time.Now(), RID: fmt.Sprintf("%032x", written), Session: "local_0001", Agent: "claude-code",
				Transport: "host-socket", Mode: "enforce", Enforced: true, Tool: "Bash", Decision: d,
				Input: json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, written)), ToolUseID: fmt.Sprintf("toolu_%06d", written),
				CLISessionID: "cli-session-1", PromptID: "prompt-1", CLIVersion: "2.1.332"}
			if d != claudehook.Allow {
				rec.Rule, rec.Reason = "bash.test", "a test rule"
			}
			if err := log.Write(rec); err != nil {
				t.Fatal(err)
			}
			if written%50 == 0 {
				beats++
				fmt.Fprintf(daemonLog, `{"time":%q,"level":"INFO","msg":"heartbeat","component":"health","host":"mac-7","user":"ada","healthy":true,"warnings":0,"mode":"enforce","sessions_live":3,"sessions_hooked":3,"record_head":"%032x"}`+"\n",
					time.Now().UTC().Format(time.RFC3339Nano), written)
				fmt.Fprintf(daemonLog, `{"time":%q,"level":"INFO","msg":"session hooked","session":"local_0001"}`+"\n", time.Now().UTC().Format(time.RFC3339Nano))
			}
			time.Sleep(pace)
		}
	}
	want := func() int { return written + beats }
	arrived := func() int {
		seen := map[string]bool{}
		for _, r := range s.records() {
			seen[r.body] = true
		}
		return len(seen)
	}
	waitAll := func(c *collector) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for arrived() < want() {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d records arrived", arrived(), want())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	c := startCollector(t, logs, storage, s.srv.URL)
	write(600, 0) // several rotations in a burst while the collector follows
	waitAll(c)
	c.stop()
	write(300, 0) // written while the collector is down, rotations included
	c = startCollector(t, logs, storage, s.srv.URL)
	write(400, 2*time.Millisecond)
	c.stop() // stopped mid-stream
	c = startCollector(t, logs, storage, s.srv.URL)
	write(200, 0)
	waitAll(c)
	time.Sleep(time.Second) // a late duplicate is counted too
	c.stop()

	// What was written, line by line, from the files (none was deleted: MaxFiles is above the
	// rotations made).
	var lines []string
	for _, name := range telemetry.Files(logPath) {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			lines = append(lines, string(bytes.TrimSuffix(line, []byte("\n"))))
		}
	}
	if len(lines) != written {
		t.Fatalf("the log holds %d records, %d were written", len(lines), written)
	}
	if _, err := os.Stat(logPath + ".5"); err != nil {
		t.Fatalf("the test meant to cross many rotations, but there is no %s.5", filepath.Base(logPath))
	}
	byBody := map[string][]received{}
	heartbeats := 0
	for _, r := range s.records() {
		if r.attrs["event.name"] == "coworkbridge.heartbeat" {
			heartbeats++
			if r.attrs["coworkbridge.healthy"] != true || r.resource["service.name"] != "coworkbridge" || r.resource["host.name"] != "mac-7" || r.resource["user.name"] != "ada" {
				t.Errorf("heartbeat mapped as %v / %v", r.attrs, r.resource)
			}
			continue
		}
		byBody[r.body] = append(byBody[r.body], r)
	}
	dups := 0
	var bodies []string // the bodies that arrived, in the order they were written
	for i, line := range lines {
		got := byBody[line]
		if len(got) == 0 {
			t.Errorf("record %d never arrived: %.120s", i+1, line)
			continue
		}
		dups += len(got) - 1
		bodies = append(bodies, got[0].body)
		checkMapped(t, line, got[0])
		delete(byBody, line)
	}
	for body := range byBody {
		t.Errorf("a record arrived that was never written (cut, merged or altered): %.200q", body)
	}
	// Read positions are kept across restarts (file_storage): a restart may send its last batch
	// again, never the log from the start.
	if dups > written/10 {
		t.Errorf("%d duplicates of %d records: the collector read the log again after a restart", dups, written)
	}
	if heartbeats < beats {
		t.Errorf("%d heartbeats arrived of %d written", heartbeats, beats)
	}
	t.Logf("%d records and %d heartbeats written, through %d rotations and 2 collector restarts: lost 0, duplicates %d (heartbeat lines received %d)",
		written, beats, len(telemetry.Files(logPath))-1, dups, heartbeats)
	// The chain, from the bodies as they arrived: every record links to the one before it.
	ordered := filepath.Join(base, "arrived.jsonl")
	if err := os.WriteFile(ordered, []byte(strings.Join(bodies, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := telemetry.Verify([]string{ordered}); err != nil || v.Broken != nil || v.Records != written {
		t.Errorf("the chain of what arrived: %+v (%v)", v, err)
	}
}

// checkMapped compares one OTLP record with the line it came from.
func checkMapped(t *testing.T, line string, r received) {
	t.Helper()
	var rec telemetry.Record
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("a line of the log is not a record: %v", err)
	}
	want := map[string]any{"event.name": "coworkbridge.decision", "tool_name": rec.Tool, "tool_use_id": rec.ToolUseID,
		"session.id": rec.CLISessionID, "prompt.id": rec.PromptID, "app.version": rec.CLIVersion,
		"coworkbridge.rid": rec.RID, "coworkbridge.session": rec.Session, "coworkbridge.decision": string(rec.Decision),
		"coworkbridge.mode": rec.Mode, "coworkbridge.enforced": rec.Enforced, "coworkbridge.transport": rec.Transport}
	if rec.Rule != "" {
		want["coworkbridge.rule"] = rec.Rule
	}
	for k, v := range want {
		if r.attrs[k] != v {
			t.Errorf("record %s: attribute %s = %v, want %v", rec.RID, k, r.attrs[k], v)
		}
	}
	if _, left := r.attrs["record"]; left {
		t.Errorf("record %s: the parsed record was left in the attributes", rec.RID)
	}
	if _, clash := r.resource["service.version"]; clash {
		t.Errorf("record %s: coworkbridge's version in service.version, where Claude Code's own events keep the CLI's", rec.RID)
	}
	for k, v := range map[string]any{"service.name": "coworkbridge", "coworkbridge.version": rec.Version, "host.name": rec.Host, "user.name": rec.User} {
		if r.resource[k] != v {
			t.Errorf("record %s: resource %s = %v, want %v", rec.RID, k, r.resource[k], v)
		}
	}
	sev := map[claudehook.Decision]plog.SeverityNumber{claudehook.Allow: plog.SeverityNumberInfo, claudehook.Ask: plog.SeverityNumberWarn,
		claudehook.Deny: plog.SeverityNumberError}[rec.Decision]
	if r.severity != sev {
		t.Errorf("record %s (%s): severity %v, want %v", rec.RID, rec.Decision, r.severity, sev)
	}
	if !r.ts.Equal(rec.TS) {
		t.Errorf("record %s: time %v, want the record's %v", rec.RID, r.ts, rec.TS)
	}
}
