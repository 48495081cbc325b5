package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osuser "os/user"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/dropin"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/policy"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// Every subcommand has a synopsis that -h and --help print on stdout, exiting 0.
func TestEverySubcommandHasASynopsisAndHelpExitsZero(t *testing.T) {
	for _, c := range commands() {
		for _, h := range []string{"-h", "--help"} {
			code, out, errs := runCLI(t, "", c.name, h)
			want := "Usage: coworkbridge " + c.name
			if c.name == "help" {
				want = "Usage: coworkbridge <command>"
			}
			if code != exitOK || !strings.Contains(out, want) {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q", c.name, h, code, out, errs)
			}
			// A flag's line is its name and at most the kind of its value: the flag package
			// takes a back-quoted word of the usage text for the value's name.
			for line := range strings.Lines(out) {
				if f := strings.Fields(line); strings.HasPrefix(line, "  --") && len(f) > 2 {
					t.Errorf("%s %s: the flag line %q names a value that is not one", c.name, h, strings.TrimSpace(line))
				}
			}
		}
	}
	// uninstall says what it removes, not what install installs.
	if _, out, _ := runCLI(t, "", "uninstall", "-h"); strings.Contains(out, "Installs") || strings.Contains(out, "the drop-in whose hook talks to it") {
		t.Errorf("uninstall -h repeats install's text:\n%s", out)
	}
}

// Misuse exits 64 with a message that names what was wrong, never a status with another meaning
// (status's 2 means "not running") and never silently.
func TestMisuseExits64AndSaysWhy(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--mode", "enforcee"}, `"enforcee" is not one of enforce, observe`},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"status", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"validate", "a.json", "b.json"}, "at most one file"},
		{[]string{"check", "a.json", "b.json"}, "at most one payload file"},
		{[]string{"version", "x"}, `unexpected argument "x"`},
		{[]string{"uninstall", "--frob"}, "flag provided but not defined"},
		{[]string{"install", "--purge"}, "flag provided but not defined: -purge"},
		{[]string{"help", "nope"}, `unknown command "nope"`},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(t, "", tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 64 and %q", tt.args, code, errs, tt.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	for _, a := range []string{"--version", "version"} {
		if code, out, _ := runCLI(t, "", a); code != exitOK || !strings.HasPrefix(out, "coworkbridge ") {
			t.Errorf("%s: exit %d, %q", a, code, out)
		}
	}
}

// validate lists every problem of the file and of its policy, each with file:line, and writes
// nothing.
func TestValidateListsEveryProblemWithFileAndLine(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("COWORKBRIDGE_STATE_DIR", state)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(dir, "none.json"))
	rules := filepath.Join(dir, "rules")
	os.MkdirAll(rules, 0o755)
	os.WriteFile(filepath.Join(rules, "org-bash.rules"), []byte("block \"org.curl\"\n  match ^curl  # no curl\n"), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{
  "version": 1,
  "mode": "enforcee",
  "hook_timeout": "5s"
}`), 0o644)
	code, out, _ := runCLI(t, "", "validate", bad)
	if code != validateInvalid || !strings.Contains(out, bad+":3: mode:") || !strings.Contains(out, `"enforcee"`) {
		t.Errorf("exit %d:\n%s", code, out)
	}

	policy := filepath.Join(dir, "policy.json")
	os.WriteFile(policy, []byte(`{
  "version": 1,
  "cowork_enabled": true,
  "policy": {
    "rules_dirs": [`+quote(rules)+`, `+quote(filepath.Join(dir, "missing"))+`],
    "disabled_rules": ["bash.no-such-rule"]
  }
}`), 0o644)
	code, out, _ = runCLI(t, "", "validate", policy)
	for _, want := range []string{"(3 problems)", "org-bash.rules:2: a comment cannot follow a pattern", "missing: ", "create it, or remove it",
		policy + ":6: policy.disabled_rules names rule \"bash.no-such-rule\""} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if code != validateInvalid {
		t.Errorf("exit %d, want 1", code)
	}

	// Several problems come in the file's line order, whatever order they were found in.
	many := filepath.Join(dir, "many.json")
	os.WriteFile(many, []byte(`{
  "version": 1,
  "policy": {"disabled_rules": ["bash.no-such-rule"]},
  "mode": "enforcee",
  "hook_timeout": "five"
}`), 0o644)
	_, out, _ = runCLI(t, "", "validate", many)
	l3, l4, l5 := strings.Index(out, many+":3:"), strings.Index(out, many+":4:"), strings.Index(out, many+":5:")
	if l3 < 0 || l4 < 0 || l5 < 0 || !(l3 < l4 && l4 < l5) {
		t.Errorf("problems out of line order:\n%s", out)
	}

	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce"}`), 0o644)
	if code, out, _ := runCLI(t, "", "validate", good); code != validateOK || !strings.Contains(out, "is valid: coworkbridge on, mode enforce") {
		t.Errorf("a valid file: exit %d %q", code, out)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("validate wrote into the state folder")
	}
	// A file checked before it ships says nothing of this workstation's drop-in.
	lockdown := filepath.Join(dir, "lockdown.json")
	os.WriteFile(lockdown, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true}`), 0o644)
	if _, out, _ := runCLI(t, "", "validate", lockdown); strings.Contains(out, "drop-in is not installed") || strings.Contains(out, "managed_settings_drop_in") {
		t.Errorf("a file to ship was compared with this Mac's drop-in:\n%s", out)
	}
	// Under lockdown, a server allowed by name only is admitted with any command: validate says so.
	byName := filepath.Join(dir, "byname.json")
	os.WriteFile(byName, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true,
		"policy":{"allowed_mcp_servers":["github",{"name":"fs","command":["npx","-y","@modelcontextprotocol/server-filesystem"]}]}}`), 0o644)
	if code, out, _ := runCLI(t, "", "validate", byName); code != validateOK || !strings.Contains(out, "Warning: policy.allowed_mcp_servers names github by name only") || strings.Contains(out, "names github, fs") {
		t.Errorf("a server by name only under lockdown: exit %d\n%s", code, out)
	}
}

// A configuration profile is checked as the admin uploads it: signed or not, each payload of
// ours with its name and the line of each problem; a misspelled rule id is said in the same
// round as the other problems.
func TestValidateChecksTheProfileAnAdminUploads(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(dir, "none.json"))
	signed := filepath.Join("..", "..", "managedconfig", "testdata", "signed.mobileconfig")
	code, out, _ := runCLI(t, "", "validate", signed)
	if code != validateOK || !strings.Contains(out, "signed by Example Corp MDM (Example Corp)") ||
		!strings.Contains(out, `payload 1 of 2 "coworkbridge settings" (com.example.coworkbridge.settings) sets coworkbridge on, mode observe`) {
		t.Errorf("a signed profile: exit %d\n%s", code, out)
	}

	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", "profile", "coworkbridge.mobileconfig"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(example), "<key>mode</key>", "<key>mdoe</key>", 1)
	broken = strings.Replace(broken, "<key>telemetry</key>",
		"<key>policy</key><dict><key>disabled_rules</key><array><string>bash.rm-critcal</string></array></dict>\n<key>telemetry</key>", 1)
	bad := filepath.Join(dir, "renamed.plist") // a profile renamed is still read as one
	os.WriteFile(bad, []byte(broken), 0o644)
	code, out, _ = runCLI(t, "", "validate", bad)
	modeLine := strings.Count(broken[:strings.Index(broken, "<key>mdoe</key>")], "\n") + 1
	for _, want := range []string{
		"(2 problems)",
		fmt.Sprintf("%s:%d: payload 1 of 2 \"coworkbridge settings\" (com.example.coworkbridge.settings): mdoe: unknown field; did you mean mode?", bad, modeLine),
		`names rule "bash.rm-critcal", which no rule file defines; did you mean "bash.rm-critical"?`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if code != validateInvalid {
		t.Errorf("exit %d, want 1", code)
	}

	none := filepath.Join(dir, "other.mobileconfig")
	os.WriteFile(none, []byte(strings.Replace(string(example), "<string>com.coworkbridge.agent</string>\n", "<string>com.example.other</string>\n", 1)), 0o644)
	if code, out, _ := runCLI(t, "", "validate", none); code != validateInvalid || !strings.Contains(out, "no payload of type com.coworkbridge.agent") {
		t.Errorf("a profile without our payload: exit %d\n%s", code, out)
	}
}

// A date (or data) value in a profile is one problem among the others, on its line: it hides
// none of them, and they come in the order of the file.
func TestValidateListsADateValueAmongEveryOtherProblemInLineOrder(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(dir, "none.json"))
	example, err := os.ReadFile(filepath.Join("..", "..", "deploy", "profile", "coworkbridge.mobileconfig"))
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(example), "<key>mode</key>", "<key>mdoe</key>", 1)
	broken = strings.Replace(broken, "<key>telemetry</key>", "<key>rescan_interval</key><date>2026-01-01T00:00:00Z</date>\n<key>telemetry</key>", 1)
	broken = strings.Replace(broken, "<key>telemetry</key>", "<key>bogus</key><data>AAEC</data>\n<key>telemetry</key>", 1)
	bad := filepath.Join(dir, "dated.mobileconfig")
	os.WriteFile(bad, []byte(broken), 0o644)
	code, out, _ := runCLI(t, "", "validate", bad)
	lineOf := func(s string) int { return strings.Count(broken[:strings.Index(broken, s)], "\n") + 1 }
	want := []string{
		fmt.Sprintf("%s:%d: ", bad, lineOf("<key>mdoe</key>")) + `payload 1 of 2 "coworkbridge settings" (com.example.coworkbridge.settings): mdoe: unknown field`,
		fmt.Sprintf("%s:%d: ", bad, lineOf("<key>rescan_interval</key>")) + `payload 1 of 2 "coworkbridge settings" (com.example.coworkbridge.settings): rescan_interval: a date cannot be a coworkbridge setting`,
		fmt.Sprintf("%s:%d: ", bad, lineOf("<key>bogus</key>")) + `payload 1 of 2 "coworkbridge settings" (com.example.coworkbridge.settings): bogus: a data value cannot be a coworkbridge setting`,
	}
	last := -1
	for _, w := range want {
		i := strings.Index(out, w)
		if i < 0 {
			t.Errorf("validate output lacks %q:\n%s", w, out)
			continue
		}
		if i < last {
			t.Errorf("%q is out of line order:\n%s", w, out)
		}
		last = i
	}
	if code != validateInvalid || !strings.Contains(out, "(3 problems)") {
		t.Errorf("exit %d, want 1 and 3 problems:\n%s", code, out)
	}
}

func quote(s string) string { return `"` + s + `"` }

// What validate says a daemon does with an invalid file is what it does on this Mac: run on the
// last good copy when there is one; with none, fail closed for a file asking for enforce, or be
// off.
func TestValidateSaysWhatADaemonDoesWithTheInvalidFileHere(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	t.Setenv("COWORKBRIDGE_STATE_DIR", state)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(dir, "none.json"))
	enforce := filepath.Join(dir, "enforce.json")
	os.WriteFile(enforce, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","decision_timeout":"10 seconds"}`), 0o644)
	observe := filepath.Join(dir, "observe.json")
	os.WriteFile(observe, []byte(`{"version":1,"cowork_enabled":true,"decision_timeout":"10 seconds"}`), 0o644)
	for _, tt := range []struct{ file, want string }{
		{enforce, "no last valid copy: a daemon given this file, which asks for enforce, fails closed and denies every tool call"},
		{observe, "no last valid copy: a daemon given this file is off until a valid file arrives"},
	} {
		if _, out, _ := runCLI(t, "", "validate", tt.file); !strings.Contains(out, tt.want) {
			t.Errorf("%s with no good copy:\n%s", filepath.Base(tt.file), out)
		}
	}
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "managed.last-good.json"), []byte(`{"version":1}`), 0o600)
	if _, out, _ := runCLI(t, "", "validate", enforce); !strings.Contains(out, "keeps running on its last valid copy") {
		t.Errorf("with a good copy:\n%s", out)
	}
}

// validate, asked about the file this Mac uses, agrees with the daemon on a managed.json that is
// a link to nothing: the daemon reports config_invalid and keeps its last valid copy, so validate
// says invalid and names the link, never "off".
func TestValidateOfThisMacsDanglingLinkSaysInvalidAsTheDaemonDoes(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "managed.last-good.json"), []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce"}`), 0o600)
	link := filepath.Join(dir, "managed.json")
	os.Symlink(filepath.Join(dir, "gone.json"), link)
	t.Setenv("COWORKBRIDGE_STATE_DIR", state)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", link)
	code, out, errs := runCLI(t, "", "validate")
	if code != validateInvalid || !strings.Contains(out, link+" is invalid") || !strings.Contains(out, "gone.json, which does not exist") ||
		!strings.Contains(out, "keeps running on its last valid copy") || strings.Contains(out+errs, "is off") {
		t.Errorf("validate of a dangling link: exit %d\n%s%s", code, out, errs)
	}
	env, err := managedconfig.SystemEnv()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if snap := managedconfig.NewDaemonLoader(env, paths).Load(); snap.Origin != managedconfig.OriginLastGood || snap.Problem == nil {
		t.Errorf("the daemon's loader, given the same link: origin %s, problem %v", snap.Origin, snap.Problem)
	}
}

// check with a candidate managed.json never replaces the last-good copy a running enforce
// deployment falls back on, and an invalid file with no good copy is an error, not a silent
// fallback to the built-in rules.
func TestCheckNeitherWritesTheLastGoodCopyNorHidesAnInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	lastGood := filepath.Join(state, "managed.last-good.json")
	enforce := `{"version":1,"cowork_enabled":true,"mode":"enforce"}`
	os.WriteFile(lastGood, []byte(enforce), 0o600)
	candidate := filepath.Join(dir, "candidate.json")
	os.WriteFile(candidate, []byte(`{"version":1,"cowork_enabled":true,"mode":"observe"}`), 0o644)
	t.Setenv("COWORKBRIDGE_STATE_DIR", state)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", candidate)
	if code, _, errs := runCLI(t, "", "check", "--bash", "ls"); code != exitOK {
		t.Fatalf("check: %d %s", code, errs)
	}
	if data, _ := os.ReadFile(lastGood); string(data) != enforce {
		t.Errorf("check replaced the last-good copy with %s", data)
	}

	os.WriteFile(candidate, []byte(`{"version":1,"mode":`), 0o644)
	code, _, errs := runCLI(t, "", "check", "--bash", "ls")
	if code != exitOK || !strings.Contains(errs, "invalid; checking with the last good copy") {
		t.Errorf("with a good copy: exit %d %q", code, errs)
	}
	os.Remove(lastGood)
	code, _, errs = runCLI(t, "", "check", "--bash", "ls")
	if code != exitFail || !strings.Contains(errs, "coworkbridge validate") {
		t.Errorf("with no good copy: exit %d %q; want 1 and advice", code, errs)
	}
}

// A rules folder missing on this Mac is a problem to report, not a reason to drop the rest of
// the policy: the classifier keeps allowed_executables and the folders that are there.
func TestAMissingRulesFolderKeepsTheRestOfThePolicy(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	os.MkdirAll(rules, 0o755)
	os.WriteFile(filepath.Join(rules, "org-bash.rules"), []byte("block \"org.no-make\"\n  match ^make\\b\n"), 0o644)
	cls, err := policy.Compile(managedconfig.Policy{RulesDirs: []string{filepath.Join(dir, "missing"), rules}, AllowedExecutables: []string{"terraform"}})
	if cls == nil || err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("classifier %v, error %v; want both", cls != nil, err)
	}
	for cmd, want := range map[string]string{"terraform plan": "allow", "make all": "deny"} {
		p, _ := checkPayload(cmd, "", "/p", nil, nil)
		if v := cls.Evaluate(context.Background(), p); string(v.Decision) != want {
			t.Errorf("%s: %s (%s), want %s", cmd, v.Decision, v.RuleID, want)
		}
	}
}

// status --user NAME asks that user's daemon, found from the user's home alone (root's own
// environment says nothing about another user's folders); an unknown user is a misuse (64),
// never another user's status shown silently.
func TestStatusForANamedUser(t *testing.T) {
	code, _, errs := runCLI(t, "", "status", "--user", "no-such-user-cb")
	if code != exitUsage || !strings.Contains(errs, "--user no-such-user-cb: no such user") {
		t.Errorf("unknown user: exit %d %q", code, errs)
	}
	me, err := osuser.Current()
	if err != nil {
		t.Skip(err)
	}
	env, err := statusEnv(me.Username)
	if err != nil || env.Home != me.HomeDir || env.Getenv != nil {
		t.Errorf("statusEnv(%s) = %+v, %v; want the home %s and no environment", me.Username, env, err, me.HomeDir)
	}
}

// The package's postinstall runs install --system-wide --managed-settings. With nobody at the
// console (a Mac pre-staged at the login window) the per-user part waits for a login, but the
// machine-wide drop-in is written all the same, and the exit status says something was left.
func TestWithNoConsoleUserTheDropInIsStillWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("relies on the console user being unknown, as it is off macOS")
	}
	code, out, errs := runCLI(t, "", "install", "--system-wide", "--managed-settings", "--dry-run", "--binary", "/opt/cb/coworkbridge")
	if code != exitFail || !strings.Contains(errs, "console user") {
		t.Errorf("exit %d, stderr %q; want 1 naming the console user", code, errs)
	}
	if !strings.Contains(out, dropin.Name) {
		t.Errorf("the drop-in was not written: %q", out)
	}
}

// validate reads what it is given within the configuration's bound, as the daemon does: a FIFO
// named by mistake is refused at once, not waited on; a device or a huge file is read no further
// than the limit, and the message says the limit rather than a size it never measured.
func TestValidateReadsWithinTheBoundWhateverItIsGiven(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	fifo := filepath.Join(dir, "managed.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, append([]byte(`{"version":1,"x":"`), bytes.Repeat([]byte("a"), 3<<20)...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{fifo, "not a regular file"},
		{"/dev/zero", "not a regular file"},
		{big, "larger than the limit (the limit is 1048576 bytes)"},
	} {
		done := make(chan struct{})
		var code int
		var out string
		go func() { defer close(done); code, out, _ = runCLI(t, "", "validate", tc.file) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("validate %s hung", tc.file)
		}
		if code != validateInvalid || !strings.Contains(out, tc.want) {
			t.Errorf("validate %s: exit %d:\n%s", tc.file, code, out)
		}
	}
}

// An organisation that sets Claude Code settings in the admin console gets the JSON that keeps
// coworkbridge in force there, and validate --console tells a merge that kept it from one that
// lost it: the hook left out, or lockdown undone.
func TestConsoleSettingsPrintWhatTheConsoleMustCarryAndValidateChecksTheMerge(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	cfg := filepath.Join(dir, "managed.json")
	os.WriteFile(cfg, []byte(`{"version":1,"cowork_enabled":true,"mode":"enforce","lockdown":true}`), 0o644)
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", cfg)
	code, out, notes := runCLI(t, "", "console-settings", "--exe", "/opt/cb/bin/coworkbridge")
	if code != exitOK || !strings.Contains(out, `"command": "/opt/cb/bin/coworkbridge-userhook"`) || !strings.Contains(out, `"allowManagedHooksOnly": true`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(notes, "note: MCP server definitions cannot be delivered") || !strings.Contains(notes, "refuses every tool call") {
		t.Errorf("the notes do not say what the console cannot carry and what it costs:\n%s", notes)
	}
	good := filepath.Join(dir, "console.json")
	org := strings.Replace(out, "{", `{"cleanupPeriodDays": 30,`, 1)
	os.WriteFile(good, []byte(org), 0o644)
	if code, out, errs := runCLI(t, "", "validate", "--console", good); code != validateOK || !strings.Contains(out, "carries coworkbridge's hook (/opt/cb/bin/coworkbridge-userhook) with lockdown") {
		t.Errorf("a good merge: exit %d:\n%s%s", code, out, errs)
	}
	for name, edit := range map[string]func(string) string{
		"no lockdown": func(s string) string {
			return strings.Replace(s, `"allowManagedHooksOnly": true`, `"allowManagedHooksOnly": false`, 1)
		},
		"no hook":    func(s string) string { return strings.ReplaceAll(s, "/opt/cb/bin/coworkbridge", "/opt/org/audit") },
		"shell form": func(s string) string { return strings.Replace(s, `"onFailure": "block"`, `"onFailure": "allow"`, -1) },
	} {
		bad := filepath.Join(dir, "bad.json")
		os.WriteFile(bad, []byte(edit(org)), 0o644)
		if code, out, _ := runCLI(t, "", "validate", "--console", bad); code != validateInvalid || !strings.Contains(out, "is invalid") {
			t.Errorf("%s: exit %d:\n%s", name, code, out)
		}
	}
	if code, _, errs := runCLI(t, "", "console-settings", "--exe", "coworkbridge"); code != exitUsage || !strings.Contains(errs, "absolute path") {
		t.Errorf("a relative --exe: exit %d, %s", code, errs)
	}
}

// A read_group that names no group of the machine is valid (the file may be checked elsewhere)
// but said: on a Mac without the group, the logs stay root's alone.
func TestValidateWarnsOfAReadGroupThisMachineDoesNotHave(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COWORKBRIDGE_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(dir, "none.json"))
	for group, warned := range map[string]bool{"cbnosuchgroup42": true, "root": false} {
		file := filepath.Join(dir, group+".json")
		os.WriteFile(file, []byte(`{"version":1,"cowork_enabled":true,"telemetry":{"read_group":"`+group+`"}}`), 0o644)
		code, out, _ := runCLI(t, "", "validate", file)
		if code != validateOK || strings.Contains(out, "Warning: telemetry.read_group") != warned {
			t.Errorf("%s: exit %d, warned %v:\n%s", group, code, !warned, out)
		}
	}
}
