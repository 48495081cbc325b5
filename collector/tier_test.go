package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/health"
	"github.com/coworkbridge/coworkbridge/internal/cbtest"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/telemetry"
)

// hostCall is a host-channel event of the session's own hook for the call id.
func hostCall(rid, id, cmd string) string {
	return fmt.Sprintf(`{"v":1,"rid":%q,"mode":"enforce","event":{"session_id":"s","cwd":"/Users/ada/x/outputs","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":%q,"tool_input":%s}}`,
		rid, id, bash(cmd))
}

// withDropIn installs a stand-in for the managed-settings drop-in (or not) and returns the
// fixture's host channel.
func (f *fixture) withDropIn(installed bool) string {
	f.t.Helper()
	ch := f.withChannel()
	f.opts.DropIn = filepath.Join(f.t.TempDir(), "50-coworkbridge.json")
	if installed {
		if err := os.WriteFile(f.opts.DropIn, []byte("{}"), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	return ch
}

// dropInFindings are the records of calls the drop-in never saw.
func (f *fixture) dropInFindings() []telemetry.Record {
	var out []telemetry.Record
	for _, r := range f.records() {
		if r.Rule == ruleid.DropInOverridden {
			out = append(out, r)
		}
	}
	return out
}

// Claude Code runs the drop-in's hook before the session's own. A call on the Mac that reaches
// the session's hook with no receipt of the drop-in's (judged, or left to the session's hook)
// means the drop-in is not in force: reported at once, with health counting each such call,
// and the session not quarantined (its own hook still judges).
func TestACallOnTheMacThatNeverReachedTheDropInIsReported(t *testing.T) {
	f := newFixture(t, managedconfig.Enforce)
	ch := f.withDropIn(true)
	f.start()
	leaveReceipt(t, ch, "a.json", claudehook.Receipt{V: 1, ToolUseID: "toolu_aside", Tool: "Bash", Aside: true, Fingerprint: map[string]uint64{}})
	leaveReceipt(t, ch, "b.json", claudehook.Receipt{V: 1, ToolUseID: "toolu_judged", Tool: "Bash", Fingerprint: fingerprint("pwd")})
	for i, id := range []string{"toolu_aside", "toolu_judged"} {
		rid := f.nextRID()
		handOver(t, ch, rid, hostCall(rid, id, []string{"ls", "pwd"}[i]))
	}
	f.waitRecords(2)
	f.settle()
	f.later(3 * time.Second)
	f.settle()
	if got := f.dropInFindings(); len(got) != 0 {
		t.Fatalf("calls the drop-in saw were reported: %+v", got)
	}
	rid := f.nextRID()
	handOver(t, ch, rid, hostCall(rid, "toolu_unseen", "ls -la"))
	cbtest.WaitForf(t, func() bool {
		f.later(time.Second)
		f.settle()
		return len(f.dropInFindings()) == 1
	}, func() string { return fmt.Sprintf("no finding; records %+v", f.records()) })
	r := f.dropInFindings()[0]
	if !strings.Contains(string(r.Input), "toolu_unseen") || !strings.Contains(r.Reason, "organisation's server-managed settings") {
		t.Errorf("finding %+v: want the call named and the console as the likely cause", r)
	}
	if n := f.health.count(string(health.CodeDropInOverridden)); n != 1 {
		t.Errorf("health counted %d calls, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(ch, "quarantine")); err == nil {
		t.Error("the session was quarantined; its own hook still judges its calls")
	}
}

// Without a drop-in installed there is nothing for a call to reach: nothing is reported. With one,
// the record names a cache of server-managed settings the session held, the likelier cause.
func TestTheDropInIsExpectedOnlyWhenInstalledAndTheCauseNamesACache(t *testing.T) {
	for _, installed := range []bool{false, true} {
		t.Run(fmt.Sprint("installed=", installed), func(t *testing.T) {
			f := newFixture(t, managedconfig.Observe)
			ch := f.withDropIn(installed)
			os.WriteFile(filepath.Join(f.dir, ".claude", "remote-settings.json"), []byte(`{"env":{}}`), 0o600)
			f.start()
			rid := f.nextRID()
			handOver(t, ch, rid, hostCall(rid, "toolu_1", "ls"))
			f.waitRecords(1)
			for range 4 {
				f.later(time.Second)
				f.settle()
			}
			got := f.dropInFindings()
			switch {
			case !installed && len(got) != 0:
				t.Errorf("reported without a drop-in: %+v", got)
			case installed && (len(got) != 1 || !strings.Contains(got[0].Reason, ".claude/remote-settings.json")):
				t.Errorf("findings %+v: want one naming the cache", got)
			}
		})
	}
}
