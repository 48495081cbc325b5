package shipping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/machine"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// The real daemon's records and heartbeats reach the OTLP endpoint through the shipped
// configuration across a collector restart and a daemon killed and started again: every record
// in its log arrives, whole and mapped, and its heartbeats arrive with their health. (Rotations
// are the writer's, exercised at scale by the test beside this one.)
func TestTheRealDaemonsRecordsAndHeartbeatsArriveThroughTheCollector(t *testing.T) {
	if collectorBin == "" {
		t.Skip("no collector built")
	}
	base := t.TempDir()
	bin := filepath.Join(base, "coworkbridge")
	if out, err := exec.Command("go", "build", "-C", filepath.Join("..", ".."), "-o", bin, "./cmd/coworkbridge").CombinedOutput(); err != nil {
		t.Fatalf("build coworkbridge: %v\n%s", err, out)
	}
	m, err := machine.New(filepath.Join(base, "mac"))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(m.Dir, "decisions.jsonl") // beside the daemon's own log, as in LogDir
	if err := m.WriteConfig(fmt.Sprintf(`{"version":1,"cowork_enabled":true,"mode":"observe","heartbeat_interval":"1s","telemetry":{"path":%q}}`, logPath)); err != nil {
		t.Fatal(err)
	}
	var sessions, hooks []string
	for i := range 4 {
		s, err := m.NewSession(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	d, err := m.Start(bin, "COWORKBRIDGE_SESSION_BUDGET=100000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("daemon log:\n%s", tail(m.LogTail(16<<10), 3000))
		}
	})
	for _, s := range sessions {
		h, err := m.WaitHooked(s, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, h)
	}
	sink := newSink(t)
	storage := filepath.Join(base, "storage")
	calls := 0
	call := func(n int) {
		for range n {
			calls++
			cmd := []string{"ls -la", "git push --force origin main", "cat ~/.ssh/id_rsa", "npm test"}[calls%4]
			if _, _, err := machine.CallHook(sessions[calls%len(sessions)], hooks[calls%len(hooks)], machine.BashPayload(cmd)); err != nil {
				t.Fatal(err)
			}
		}
	}
	logLines := func() []string {
		data, _ := os.ReadFile(logPath)
		var out []string
		for line := range bytes.Lines(data) {
			out = append(out, string(bytes.TrimSuffix(line, []byte("\n"))))
		}
		return out
	}
	c := startCollector(t, m.Dir, storage, sink.srv.URL)
	call(100)
	c.stop()
	call(50)                            // recorded while the collector is down
	if err := d.Restart(); err != nil { // SIGKILL, then a new daemon
		t.Fatal(err)
	}
	c = startCollector(t, m.Dir, storage, sink.srv.URL)
	call(100)
	// Every call recorded, then every record arrived.
	deadline := time.Now().Add(60 * time.Second)
	for {
		lines := logLines()
		got := map[string]bool{}
		beats := 0
		for _, r := range sink.records() {
			got[r.body] = true
			if r.attrs["event.name"] == "coworkbridge.heartbeat" {
				beats++
			}
		}
		missing := 0
		for _, l := range lines {
			if !got[l] {
				missing++
			}
		}
		if len(lines) >= calls && missing == 0 && beats > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls, %d records in the log, %d of them not arrived, %d heartbeats arrived", calls, len(lines), missing, beats)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.stop()
	byBody := map[string]received{}
	var beat received
	for _, r := range sink.records() {
		if r.attrs["event.name"] == "coworkbridge.heartbeat" {
			beat = r
			continue
		}
		byBody[r.body] = r
	}
	for _, l := range logLines() {
		var rec telemetry.Record
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Transport != "vm-spool" {
			continue // a finding of the daemon's own (none expected here), mapped alike
		}
		checkMapped(t, l, byBody[l])
	}
	if beat.attrs["coworkbridge.healthy"] == nil || beat.attrs["coworkbridge.sessions_hooked"] == nil || !strings.HasPrefix(fmt.Sprint(beat.attrs["coworkbridge.mode"]), "observe") ||
		beat.resource["host.name"] == nil || beat.resource["host.name"] == "" {
		t.Errorf("a real heartbeat arrived mapped as %v", beat.attrs)
	}
}
