package hosthook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/decisions"
	"github.com/coworkbridge/coworkbridge/ruleid"
	"github.com/coworkbridge/coworkbridge/session"
)

// coworkSession makes a Cowork session folder under m's sessions root and the host channel the
// daemon keeps for it, and returns the session's .claude and the channel.
func (m *mac) coworkSession(t *testing.T, id string) (configDir string, ch *session.Session) {
	t.Helper()
	configDir = filepath.Join(m.sessions, "acct", "org", id, ".claude")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := session.ChannelDir(filepath.Join(m.state, "channel"), id)
	if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(session.BridgeDir)), 0o700); err != nil {
		t.Fatal(err)
	}
	ch, err := session.OpenOwn(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return configDir, ch
}

const harmless = `{"tool_name":"Bash","tool_use_id":"toolu_h","tool_input":{"command":"echo hi"}}`

// Under lockdown the session's own hook does not run: the host hook refuses every call of a
// session the daemon quarantined, until the quarantine lapses, and an unreadable quarantine file
// counts as one.
func TestTheHostHookRefusesEveryCallOfAQuarantinedSession(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true}`)
	configDir, ch := m.coworkSession(t, "local_q")
	opts := m.options(true, "CLAUDE_CONFIG_DIR", configDir)
	if out := Answer(strings.NewReader(harmless), opts); len(out) != 0 {
		t.Fatalf("before the quarantine: %s", out)
	}
	decisions.WriteQuarantine(ch, time.Now().Add(time.Hour), "settings set hooks.Stop")
	out := Answer(strings.NewReader(harmless), opts)
	if answer(out) != "deny" || !strings.Contains(string(out), "quarantined because settings set hooks.Stop") || !strings.Contains(string(out), ruleid.Quarantine) {
		t.Fatalf("during the quarantine: %s", out)
	}
	decisions.WriteQuarantine(ch, time.Now().Add(-time.Second), "settings set hooks.Stop")
	if out := Answer(strings.NewReader(harmless), opts); len(out) != 0 {
		t.Errorf("after it lapsed: %s", out)
	}
	os.WriteFile(filepath.Join(ch.Dir(), filepath.FromSlash(session.QuarantineFile)), []byte("{"), 0o600)
	if out := Answer(strings.NewReader(harmless), opts); answer(out) != "deny" {
		t.Errorf("an unreadable quarantine let the call through: %s", out)
	}
}

// Each call the host hook judges in a Cowork session leaves a receipt in its host channel: the
// call's id and tool, whether it was denied, and the input's fingerprint, never the input.
func TestTheHostHookLeavesAReceiptOfEachCallItJudged(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true}`)
	configDir, ch := m.coworkSession(t, "local_r")
	opts := m.options(true, "CLAUDE_CONFIG_DIR", configDir)
	push := `{"tool_name":"Bash","tool_use_id":"toolu_p","tool_input":{"command":"git push --force secret-remote"}}`
	for _, call := range []string{harmless, push} {
		Answer(strings.NewReader(call), opts)
	}
	names, _ := ch.ReadDirNames(session.ReceiptsDir, 10)
	got := map[string]claudehook.Receipt{}
	for _, n := range names {
		data, _ := ch.ReadFile(session.ReceiptsDir+"/"+n, claudehook.MaxReceipt)
		if strings.Contains(string(data), "secret-remote") {
			t.Errorf("a receipt holds the input: %s", data)
		}
		r, err := claudehook.ParseReceipt(data)
		if err != nil {
			t.Fatal(err)
		}
		got[r.ToolUseID] = r
	}
	if len(got) != 2 || got["toolu_h"].Denied || !got["toolu_p"].Denied || got["toolu_p"].Tool != "Bash" || len(got["toolu_p"].Fingerprint) != 1 {
		b, _ := json.Marshal(got)
		t.Errorf("receipts %s", b)
	}
}

// The host hook's own denies, when it cannot judge a call (here, a tool call it cannot read),
// carry the organisation's notice as every other deny does.
func TestTheHostHooksOwnDenyCarriesTheOrganisationsNotice(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","block_message":{"text":"Stopped by Example Corp.","help_url":"https://it.example.com/{rule}"}}`)
	out := Answer(strings.NewReader(`{"tool_name":`), m.options(true))
	var o struct {
		H struct {
			Reason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &o); err != nil || answer(out) != "deny" {
		t.Fatalf("%s %v", out, err)
	}
	if !strings.HasPrefix(o.H.Reason, "Stopped by Example Corp.\ncoworkbridge: this tool call was blocked because cannot read the tool call") ||
		!strings.HasSuffix(o.H.Reason, "More: https://it.example.com/coworkbridge.hook") {
		t.Errorf("reason %q", o.H.Reason)
	}
}
