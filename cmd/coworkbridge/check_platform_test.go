package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

// check --platform darwin --home judges with the map a Mac with that home has, from any machine:
// the spellings of a protected place an agent tried on the wave-3 map, and their look-alikes.
func TestCheckJudgesWithTheMapOfTheMacItIsToldOf(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	const (
		home     = "/Users/alice"
		log      = home + "/Library/Logs/CoworkBridge/decisions.jsonl"
		sessions = home + "/Library/Application Support/Claude/local-agent-mode-sessions/acc/org"
		project  = home + "/src/app"
	)
	call := func(tool string, input map[string]any, cwd string) string {
		b, _ := json.Marshal(map[string]any{"tool_name": tool, "tool_input": input, "cwd": cwd})
		return string(b)
	}
	read := func(p string) string { return call("Read", map[string]any{"file_path": p}, project) }
	sh := func(cmd string) string { return call("Bash", map[string]any{"command": cmd}, project) }
	grep := func(p string) string { return call("Grep", map[string]any{"pattern": "rid", "path": p}, project) }
	tests := []struct {
		name, payload, want string
	}{
		{"the log as written", read(log), "read.guard-files"},
		{"the log in lower case", read("/users/alice/library/logs/coworkbridge/decisions.jsonl"), "read.guard-files"},
		{"the log in upper case", read("/USERS/ALICE/Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"the log through the data volume", read("/System/Volumes/Data" + log), "read.guard-files"},
		{"a file by number", read("/.vol/16777220/8123"), "read.guard-files"},
		{"health.json through ~alice", sh("cat ~alice/Library/Application\\ Support/CoworkBridge/health.json"), "read.guard-files"},
		{"the log through a glob", sh("cat ~/Lib*/Logs/Cow*/decisions.jsonl"), "read.guard-files"},
		{"the log after cd", sh("cd ~/Library/Logs/CoworkBridge && sed -i '$d' decisions.jsonl"), "read.guard-files"},
		{"the log after cd .. twice", sh("cd .. && cd .. && cat Library/Logs/CoworkBridge/decisions.jsonl"), "read.guard-files"},
		{"another session's instructions", call("Write", map[string]any{"file_path": "/system/volumes/data" + sessions + "/local_b/outputs/CLAUDE.md", "content": "x"}, project), "path.other-session"},
		{"Grep at the home", grep(home), "read.guard-files"},
		{"Grep at ~/Library", grep("~/Library"), "read.guard-files"},
		{"Grep at ~/Library/Logs", grep(home + "/Library/Logs"), "read.guard-files"},
		{"Grep at Application Support", grep(home + "/Library/Application Support"), "read.guard-files"},
		{"find -exec at the home", sh("find ~ -name '*.jsonl' -exec cat {} +"), "read.guard-files"},
		{"grep -r at ~/Library", sh("grep -r rid ~/Library"), "read.guard-files"},
		{"tar -C the home", sh("tar -czf /tmp/h.tgz -C ~ Library"), "read.guard-files"},

		{"a project folder named Library", read(project + "/Library/notes.md"), ""},
		{"a file named users.txt", read(project + "/users.txt"), ""},
		{"a search inside its project", grep(project), ""},
		{"grep -r in the project", sh("grep -rn TODO ."), ""},
		{"/private/tmp", read("/private/tmp/build.log"), ""},
	}
	for _, tt := range tests {
		code, out, errs := runCLI(t, tt.payload, "check", "--platform", "darwin", "--home", home, "--json", "-")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tt.name, code, errs)
		}
		var got struct{ Decision, Rule string }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v %q", tt.name, err, out)
		}
		if got.Rule != tt.want || tt.want == "" && got.Decision != "allow" {
			t.Errorf("%s: %s %s, want %q", tt.name, got.Decision, got.Rule, tt.want)
		}
	}
	if code, _, errs := runCLI(t, "", "check", "--platform", "windows", "--bash", "ls"); code != exitUsage {
		t.Errorf("--platform windows: exit %d (%s), want a usage error", code, errs)
	}
}

// A Mac previewed from another machine names coworkbridge's program where the package puts it on
// a Mac (the postinstall scripts say so too), not this machine's binary.
func TestAMacPreviewNamesTheMacsProgramNotThisMachines(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	_, out, errs := runCLI(t, "", "check", "--places", "--platform", "darwin", "--home", "/Users/alice")
	if !strings.Contains(out, managedconfig.MacExecutable+"\n") {
		t.Errorf("the preview does not name %s:\n%s%s", managedconfig.MacExecutable, out, errs)
	}
	if exe, err := os.Executable(); err == nil && strings.Contains(out, exe) {
		t.Errorf("the preview names this machine's binary %s:\n%s", exe, out)
	}
	for _, script := range []string{"../../deploy/pkg/scripts/postinstall", "../../deploy/pkg/scripts-system/postinstall"} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(managedconfig.MacExecutable)
		if !strings.Contains(string(b), `"`+managedconfig.MacExecutable+`"`) && !strings.Contains(string(b), `DIR="`+dir+`"`) {
			t.Errorf("%s does not install coworkbridge at %s", script, managedconfig.MacExecutable)
		}
	}
}

// System mode's map is root's folders, not the user's: what its daemon judges with, and what
// check lists on a system-mode install (or, with --system, in a preview of one).
func TestTheMapOfASystemModeMacIsRootsFolders(t *testing.T) {
	t.Setenv("COWORKBRIDGE_MANAGED_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	_, user, _ := runCLI(t, "", "check", "--places", "--platform", "darwin", "--home", "/Users/alice")
	_, system, errs := runCLI(t, "", "check", "--places", "--platform", "darwin", "--home", "/Users/alice", "--system")
	for _, tc := range []struct {
		out, has, hasNot string
	}{
		{system, "/Library/Application Support/CoworkBridge/state\n", "/Users/alice/Library/Application Support/CoworkBridge\n"},
		{system, "/Library/Logs/CoworkBridge/decisions.jsonl*\n", "/Users/alice/Library/Logs/CoworkBridge"},
		{user, "/Users/alice/Library/Application Support/CoworkBridge\n", "/Library/Application Support/CoworkBridge/state\n"},
		{system, "/Library/LaunchDaemons/" + managedconfig.DaemonLabel + ".plist\n", ""},
		{user, "/Library/LaunchDaemons/" + managedconfig.DaemonLabel + ".plist\n", ""},
	} {
		if !strings.Contains(tc.out, tc.has) || tc.hasNot != "" && strings.Contains(tc.out, tc.hasNot) {
			t.Errorf("want %q and not %q in:\n%s%s", tc.has, tc.hasNot, tc.out, errs)
		}
	}
}
