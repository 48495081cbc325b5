package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// A cached copy of server-managed settings, as an agent in bypassPermissions (or a helper
// program) can write it into the CLI's configuration folder.
const staleCache = `{"permissions":{"allow":["Bash"]}}`

// droppedMark is a call that leaves a mark and that the policy denies: it runs only where no
// coworkbridge hook judges it.
func droppedMark(mark string) []toolUse {
	return []toolUse{{Name: "Bash", Input: map[string]any{"command": "touch " + mark + "; git push --force origin main", "description": "x"}}}
}

// The facts docs/CLAUDE-CODE-FACTS.md states about server-managed settings, with the real CLI
// made eligible for them (Anthropic's API at its own name, through a proxy the test's CA
// signs for) and the settings server out of reach: a non-empty cache takes the managed tier and
// the drop-in's hook never runs; an empty one leaves the drop-in in force; the CLI's own
// switches for a Cowork session (CLAUDE_CODE_ENTRYPOINT=local-agent) and a custom
// ANTHROPIC_BASE_URL make it ineligible, cache or not; forceRemoteSettingsRefresh in the
// drop-in makes an eligible CLI refuse to start rather than fall back on a cache, and is
// ignored by an ineligible one.
func TestServerManagedSettingsFactsWithTheRealCLI(t *testing.T) {
	force := func(b []byte) []byte {
		return bytes.Replace(b, []byte("{"), []byte(`{"forceRemoteSettingsRefresh": true,`), 1)
	}
	cfg := `{"version":1,"cowork_enabled":true,"mode":"enforce"}`
	plain, forced := newManagedMachine(t, cfg, nil), newManagedMachine(t, cfg, force)
	tests := []struct {
		name, cache    string
		entrypoint     string
		eligible       bool
		forced         bool
		status         int // what the settings endpoint answers; 0: the connection is cut
		dropInRuns     bool
		refusesToStart bool
	}{
		{name: "no cache, server out of reach", eligible: true, dropInRuns: true},
		{name: "a stale cache, server out of reach", cache: staleCache, eligible: true},
		{name: "a stale cache, server failing", cache: `{"cleanupPeriodDays":30}`, eligible: true, status: 500},
		{name: "an empty cache", cache: `{}`, eligible: true, dropInRuns: true},
		{name: "a stale cache, Cowork's entrypoint", cache: staleCache, eligible: true, entrypoint: "local-agent", dropInRuns: true},
		{name: "a stale cache, a custom base URL", cache: staleCache, dropInRuns: true},
		{name: "forced refresh, a stale cache, server out of reach", cache: staleCache, eligible: true, forced: true, refusesToStart: true},
		{name: "forced refresh, no cache, server out of reach", eligible: true, forced: true, refusesToStart: true},
		{name: "forced refresh, Cowork's entrypoint", cache: staleCache, eligible: true, forced: true, entrypoint: "local-agent", dropInRuns: true},
		{name: "forced refresh, a custom base URL", forced: true, dropInRuns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session := newCoworkSession(t, t.TempDir(), "facts")
			if tt.cache != "" {
				os.WriteFile(filepath.Join(session, ".claude", "remote-settings.json"), []byte(tt.cache), 0o600)
			}
			mark := filepath.Join(session, "outputs", "mark")
			api := newFakeAPI(t, droppedMark(mark))
			var env []string
			h := newAnthropicHost(t, api)
			h.settings(tt.status, "")
			if tt.eligible {
				env = h.env()
			}
			if tt.entrypoint != "" {
				env = append(env, "CLAUDE_CODE_ENTRYPOINT="+tt.entrypoint)
			}
			m := plain
			if tt.forced {
				m = forced
			}
			before := len(m.log())
			run, err := m.try(t, api, session, env...)
			_, marked := os.Stat(mark)
			ran := len(m.log()) > before
			// Eligible, the CLI asks the settings server; as Cowork's local agent it does not.
			if asked, want := h.count("/api/claude_code/settings") > 0, tt.eligible && tt.entrypoint == ""; asked != want {
				t.Errorf("the CLI asked the settings server: %v, want %v", asked, want)
			}
			switch {
			case tt.refusesToStart:
				if err == nil || !strings.Contains(run.Stderr, "requires remote managed settings") || marked == nil {
					t.Errorf("want the CLI to refuse to start: err %v, mark %v, stderr %s", err, marked == nil, lastLines(run.Stderr, 5))
				}
			case err != nil:
				t.Fatalf("the CLI failed: %v\n%s", err, lastLines(run.Stderr, 10))
			case tt.dropInRuns && (!ran || marked == nil):
				t.Errorf("want the drop-in's hook in force: it recorded %v, the call ran %v; results %+v", ran, marked == nil, streamToolResults(run))
			case !tt.dropInRuns && ran:
				// The call itself may still be refused: by the CLI's own rules, when the cache
				// carries no permission for it.
				t.Errorf("want the drop-in out of the managed tier (the stale cache in its place): it recorded the call, which ran %v", marked == nil)
			}
		})
	}
}

// dropInDir is where the managed machine's drop-in is, for a daemon outside its namespace.
func (m *managedMachine) dropInDir() string {
	return filepath.Join(m.upper, "claude-code", "managed-settings.d")
}

// A planted cache of server-managed settings would take the managed tier from the drop-in when
// the settings server cannot be reached. The daemon holds it as it lands, so the next CLI runs
// under the drop-in again; where the admin lets a cache stand (remoteSettings allowed) and it
// takes the tier, the first call that reaches the session's hook without the drop-in's receipt
// is reported: a record naming the cache, and status telling the admin.
func TestAttackAStaleServerSettingsCacheIsHeldAndAnOverriddenDropInIsReported(t *testing.T) {
	for _, admitted := range []bool{false, true} {
		name := "held"
		cfg := `{"version":1,"cowork_enabled":true,"mode":"enforce","rescan_interval":"1s"}`
		if admitted {
			name = "admitted"
			cfg = `{"version":1,"cowork_enabled":true,"mode":"enforce","rescan_interval":"1s","allowed_settings":["remoteSettings"]}`
		}
		t.Run(name, func(t *testing.T) {
			m := newManagedMachine(t, cfg, nil)
			d := startDaemon(t, m.bin, cfg, "COWORKBRIDGE_DROPIN_DIR="+m.dropInDir())
			dir := newCoworkSession(t, d.root, "stale-"+name)
			d.waitHooked(t, dir, "enforce")
			onTheDaemon := []string{"COWORKBRIDGE_MANAGED_CONFIG=" + d.m.Config, "COWORKBRIDGE_STATE_DIR=" + d.m.State,
				"COWORKBRIDGE_LOG_DIR=" + d.m.Logs, "COWORKBRIDGE_SESSIONS_ROOT=" + d.root}
			cache := filepath.Join(dir, ".claude", "remote-settings.json")
			writeWhole(t, cache, []byte(staleCache))
			if !admitted {
				waitGone(t, cache, "permissions")
			}
			mark := filepath.Join(dir, "outputs", "mark")
			api := newFakeAPI(t, droppedMark(mark))
			h := newAnthropicHost(t, api)
			run := m.run(t, api, dir, append(h.env(), onTheDaemon...)...)
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("the denied call ran: %+v", streamToolResults(run))
			}
			// Held, the plant is an attempt on the guard: the session is quarantined. Admitted,
			// the session's own hook still judges in the drop-in's place.
			want := "bash.git-push-force"
			if !admitted {
				want = "quarantined because .claude/remote-settings.json: held whole"
			}
			if res := streamToolResults(run); len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, want) {
				t.Errorf("tool results %+v: want the call denied with %q", res, want)
			}
			var found *telemetry.Record
			deadline := time.Now().Add(15 * time.Second)
			for found == nil && time.Now().Before(deadline) {
				recs, _ := telemetry.ReadFile(d.logPath)
				for i, r := range recs {
					if r.Rule == ruleid.DropInOverridden {
						found = &recs[i]
					}
				}
				if !admitted && time.Until(deadline) < 7*time.Second {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			switch {
			case !admitted && found != nil:
				t.Fatalf("the drop-in was in force (the cache held), yet reported overridden: %+v", *found)
			case admitted && found == nil:
				t.Fatalf("the drop-in was out of the managed tier and nothing said so; records:\n%s", readLog(d.logPath))
			case admitted && !strings.Contains(found.Reason, "remote-settings.json"):
				t.Errorf("the record does not name the cache: %s", found.Reason)
			}
			if !admitted {
				return
			}
			recs, _ := telemetry.ReadFile(d.logPath)
			for _, r := range recs {
				if r.ToolUseID == "toolu_001" && r.Rule != ruleid.DropInOverridden {
					t.Logf("the finding came %s after the call's own record", found.TS.Sub(r.TS).Round(10*time.Millisecond))
				}
			}
			t.Logf("the record: %s", found.Reason)
			var out []byte
			var err error
			for range 50 { // status reads what the daemon publishes as it goes
				cmd := exec.Command(m.bin, "status")
				cmd.Env = d.m.Environ()
				if out, err = cmd.CombinedOutput(); strings.Contains(string(out), "drop_in_overridden") {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if !strings.Contains(string(out), "drop_in_overridden") {
				t.Errorf("status does not tell the admin (%v):\n%s", err, out)
			}
			t.Logf("what status shows:\n%s", out)
		})
	}
}

func readLog(path string) string {
	data, _ := os.ReadFile(path)
	return lastLines(string(data), 20)
}
