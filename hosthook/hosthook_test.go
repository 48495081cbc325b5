package hosthook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// mac is a user's machine in a temporary folder, its environment naming managed.json, the state
// and log folders and one sessions root through the development overrides.
type mac struct {
	home, config, state, sessions string
	vars                          map[string]string
}

func newMac(t testing.TB, config string) *mac {
	t.Helper()
	home := t.TempDir()
	m := &mac{home: home, config: filepath.Join(home, "managed.json"), state: filepath.Join(home, "state"), sessions: filepath.Join(home, "sessions")}
	m.vars = map[string]string{
		managedconfig.EnvManagedConfig: m.config, managedconfig.EnvStateDir: m.state,
		managedconfig.EnvLogDir: filepath.Join(home, "logs"), managedconfig.EnvSessionsRoot: m.sessions,
	}
	if err := os.WriteFile(m.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *mac) options(dev bool, extra ...string) Options {
	vars := map[string]string{}
	for k, v := range m.vars {
		vars[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	env := managedconfig.Env{GOOS: runtime.GOOS, Home: m.home, Getenv: func(k string) string { return vars[k] }}
	return Options{Env: func() (managedconfig.Env, error) { return env, nil }, DevOverrides: dev, Version: "test"}
}

func answer(out []byte) string {
	var o struct {
		H struct {
			D string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	if len(out) == 0 {
		return ""
	}
	if json.Unmarshal(out, &o) != nil {
		return "unreadable"
	}
	return o.H.D
}

const forcePush = `{"tool_name":"Bash","tool_input":{"command":"git push --force"}}`

// The host hook runs with an environment the session's settings can extend: a deployment build
// must not let COWORKBRIDGE_MANAGED_CONFIG point it at a policy of the agent's making.
func TestTheHostHookIgnoresDevelopmentOverridesOutsideADevelopmentBuild(t *testing.T) {
	for _, p := range []string{"/etc/coworkbridge/managed.json", "/Library/Application Support/CoworkBridge/managed.json"} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists on this machine; the hook would read it", p)
		}
	}
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	if out := Answer(strings.NewReader(forcePush), m.options(true)); answer(out) != "deny" {
		t.Fatalf("a development build must honour the override: %s", out)
	}
	if out := Answer(strings.NewReader(forcePush), m.options(false)); len(out) != 0 {
		t.Errorf("a deployment build followed COWORKBRIDGE_MANAGED_CONFIG: %s", out)
	}
}

func TestAHomeThatCannotBeFoundIsADeny(t *testing.T) {
	opts := Options{Env: func() (managedconfig.Env, error) { return managedconfig.Env{}, os.ErrNotExist }}
	if out := Answer(strings.NewReader(forcePush), opts); answer(out) != "deny" {
		t.Errorf("no home: %q, want deny (the mode cannot be known)", out)
	}
}

// sessionWithOurEntry makes a session under root carrying the entry the injector writes there,
// and returns its .claude folder.
func (m *mac) sessionWithOurEntry(t *testing.T, root, id string) string {
	t.Helper()
	claude := filepath.Join(root, "acct", "org", id, ".claude")
	if err := os.MkdirAll(claude, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := managedconfig.Defaults(managedconfig.Env{GOOS: runtime.GOOS, Home: m.home}, managedconfig.Paths{})
	cfg.Mode, cfg.CoworkEnabled = managedconfig.Enforce, true
	e, err := hookentry.NewEntry(cfg, filepath.Join(m.state, "channel", id, ".claude", "coworkbridge"))
	if err != nil {
		t.Fatal(err)
	}
	data, _, _ := hookentry.Merge(nil, e)
	if err := os.WriteFile(filepath.Join(claude, "settings.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return claude
}

func TestTheHookStandsAsideOnlyForARealSessionReachedThroughRealFolders(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	real := m.sessionWithOurEntry(t, m.sessions, "local_s1")
	// The same settings in a tree outside the root, reached through a link planted at each level.
	outside := filepath.Join(m.home, "outside")
	m.sessionWithOurEntry(t, outside, "local_s1")
	links := map[string]string{
		filepath.Join(m.sessions, "linked"):                  filepath.Join(outside, "acct"),
		filepath.Join(m.sessions, "acct", "linkedorg"):       filepath.Join(outside, "acct", "org"),
		filepath.Join(m.sessions, "acct", "org", "local_s2"): filepath.Join(outside, "acct", "org", "local_s1"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, configDir string
		standAside      bool
	}{
		{"the session's own .claude", real, true},
		{"the same, spelled with dots", filepath.Join(m.sessions, "acct", "x", "..", "org", "local_s1", ".claude"), true},
		{"a link at the account level", filepath.Join(m.sessions, "linked", "org", "local_s1", ".claude"), false},
		{"a link at the org level", filepath.Join(m.sessions, "acct", "linkedorg", "local_s1", ".claude"), false},
		{"a session folder that is a link", filepath.Join(m.sessions, "acct", "org", "local_s2", ".claude"), false},
		{"a tree outside the roots", filepath.Join(outside, "acct", "org", "local_s1", ".claude"), false},
		{"a relative path", "acct/org/local_s1/.claude", false},
		{"not a .claude folder", filepath.Join(m.sessions, "acct", "org", "local_s1"), false},
		{"unset", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Answer(strings.NewReader(forcePush), m.options(true, "CLAUDE_CONFIG_DIR", tt.configDir))
			if got := answer(out) == ""; got != tt.standAside {
				t.Errorf("stood aside %v (%q), want %v", got, out, tt.standAside)
			}
		})
	}
}

// Standing aside, the hook still tells the daemon it saw the call (an aside receipt, judging
// nothing): a host-loop call that reaches the session's hook without one means the drop-in was
// not in force (server-managed settings took the managed tier).
func TestStandingAsideLeavesAReceiptThatTheDropInSawTheCall(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	claude := m.sessionWithOurEntry(t, m.sessions, "local_s1")
	receipts := filepath.Join(m.state, "channel", "local_s1", filepath.FromSlash(session.ReceiptsDir))
	payload := `{"tool_use_id":"toolu_01","tool_name":"Bash","tool_input":{"command":"git push --force"}}`
	if out := Answer(strings.NewReader(payload), m.options(true, "CLAUDE_CONFIG_DIR", claude)); len(out) != 0 {
		t.Fatalf("did not stand aside: %s", out)
	}
	if _, err := os.Stat(receipts); err == nil {
		t.Fatal("a receipt was left in a channel the daemon never made")
	}
	os.MkdirAll(filepath.Join(m.state, "channel", "local_s1"), 0o700)
	Answer(strings.NewReader(payload), m.options(true, "CLAUDE_CONFIG_DIR", claude))
	names, _ := os.ReadDir(receipts)
	if len(names) != 1 {
		t.Fatalf("receipts %v, want one", names)
	}
	data, _ := os.ReadFile(filepath.Join(receipts, names[0].Name()))
	r, err := claudehook.ParseReceipt(data)
	if err != nil || !r.Aside || r.ToolUseID != "toolu_01" || r.Denied {
		t.Errorf("receipt %+v %v: want an aside receipt of toolu_01", r, err)
	}
	if log, _ := os.ReadFile(filepath.Join(m.home, "logs", "decisions.jsonl")); len(log) != 0 {
		t.Errorf("standing aside recorded the call: %s", log)
	}
}

// A denied user reads the organisation's words and its help page, with the rule and the
// request filled in; the decision log keeps what check shows (matched text, nudge, effects).
func TestADeniedCallTellsTheAdminsMessageAndTheLogKeepsTheExplanation(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce","telemetry":{"redact":true},
		"block_message":{"text":"Example Corp's AI policy stopped this.","help_url":"https://it.example.com/ai?rule={rule}&event={rid}"}}`)
	out := Answer(strings.NewReader(`{"tool_name":"Bash","tool_input":{"command":"rm -rf ~"},"cwd":"/Users/ada/p"}`), m.options(true))
	var o struct {
		H struct {
			D, R string
		} `json:"hookSpecificOutput"`
	}
	raw := strings.NewReplacer(`"permissionDecision"`, `"D"`, `"permissionDecisionReason"`, `"R"`).Replace(string(out))
	if err := json.Unmarshal([]byte(raw), &o); err != nil || o.H.D != "deny" {
		t.Fatalf("answer %s", out)
	}
	log, err := os.ReadFile(filepath.Join(m.home, "logs", "decisions.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		RID, Matched, Nudge string
		Effects             []string
	}
	if err := json.Unmarshal(log, &rec); err != nil {
		t.Fatalf("record %s: %v", log, err)
	}
	lines := strings.Split(o.H.R, "\n")
	if len(lines) != 3 || lines[0] != "Example Corp's AI policy stopped this." || !strings.Contains(lines[1], "rule bash.rm-critical") ||
		lines[2] != "More: https://it.example.com/ai?rule=bash.rm-critical&event="+rec.RID {
		t.Errorf("the reason shown:\n%s", o.H.R)
	}
	if rec.Matched != "rm -rf ~" || rec.Nudge == "" || len(rec.Effects) == 0 || !strings.Contains(rec.Effects[0], "delete target=~") {
		t.Errorf("the record does not explain the deny: %s", log)
	}
}

// BenchmarkAnswer is one call's work in the host hook without the process around it (reading the
// configuration, compiling the policy, judging, recording), for profiles:
//
//	go test ./hosthook -run x -bench Answer -cpuprofile cpu.out
//
// BenchmarkHookProcess in cmd/coworkbridge measures the whole process.
func BenchmarkAnswer(b *testing.B) {
	for _, tc := range []struct{ name, config, payload string }{
		{"enforce-allow", `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, `{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}`},
		{"enforce-deny", `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, `{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"}}`},
		{"observe-read", `{"version":1,"cowork_enabled":true,"mode":"observe"}`, `{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/Users/alex/project/main.go"}}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := newMac(b, tc.config)
			opts := m.options(true)
			for b.Loop() {
				Answer(strings.NewReader(tc.payload), opts)
			}
		})
	}
}

// A shell on the Mac follows the Mac's links: a command that names a protected file through a
// link in its folder (k/notes, k a link to ~/.ssh) is judged where the link leads.
func TestAShellCommandThroughALinkIsJudgedWhereItLeads(t *testing.T) {
	m := newMac(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	ssh := filepath.Join(m.home, ".ssh")
	proj := filepath.Join(m.home, "proj")
	os.MkdirAll(ssh, 0o700)
	os.MkdirAll(proj, 0o700)
	os.WriteFile(filepath.Join(ssh, "notes"), []byte("secret"), 0o600)
	if err := os.Symlink(ssh, filepath.Join(proj, "k")); err != nil {
		t.Fatal(err)
	}
	call := func(cmd string) string {
		in, _ := json.Marshal(map[string]any{"tool_name": "Bash", "tool_input": map[string]string{"command": cmd}, "cwd": proj})
		return answer(Answer(strings.NewReader(string(in)), m.options(true, "HOME", m.home)))
	}
	if got := call("cat k/notes"); got != "deny" {
		t.Errorf("cat k/notes through the link: %q, want deny", got)
	}
	if got := call("cat README.md"); got != "" {
		t.Errorf("a file of the folder's own: %q, want no objection", got)
	}
}
