package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The agent's reach on the Mac, with the real CLI in the host loop (file tools on the Mac): each
// attack an agent tried against coworkbridge's own files and against another session is refused
// by the daemon's answer, and what it aimed at is unchanged.
func TestAttackFileToolsOnTheMacReachNeitherCoworkbridgeNorAnotherSession(t *testing.T) {
	d, a := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, "reachA", "enforce")
	b := newCoworkSession(t, d.root, "reachB")
	d.waitHooked(t, b, "enforce")
	os.MkdirAll(filepath.Join(b, "outputs"), 0o755)
	os.WriteFile(filepath.Join(b, "outputs", "plan.md"), []byte("B's plan\n"), 0o644)
	channel := filepath.Join(d.m.State, "channel", filepath.Base(a))
	if err := os.Symlink(channel, filepath.Join(a, "outputs", "notes")); err != nil {
		t.Fatal(err)
	}
	forged := strings.Repeat("ab", 16)
	tests := []reachAttack{
		{"read of the decision log", toolUse{"Read", map[string]any{"file_path": d.logPath}}, "read.guard-files", ""},
		{"write of a new decision log file", toolUse{"Write", map[string]any{"file_path": d.logPath + ".9", "content": "{}\n"}}, "path.guard-files", d.logPath + ".9"},
		{"write of a health file", toolUse{"Write", map[string]any{"file_path": filepath.Join(d.m.State, "health-forged.json"), "content": `{"healthy":true}`}}, "path.guard-files", filepath.Join(d.m.State, "health-forged.json")},
		{"write through a link in outputs into the host channel", toolUse{"Write", map[string]any{"file_path": filepath.Join(a, "outputs", "notes", "coworkbridge", ".ev-"+forged), "content": "{}\n"}}, "path.guard-files", filepath.Join(channel, "coworkbridge", ".ev-"+forged)},
		{"transcript planted in another session", toolUse{"Write", map[string]any{"file_path": filepath.Join(b, ".claude", "projects", "p", "forged.jsonl"), "content": "{}\n"}}, "path.other-session", filepath.Join(b, ".claude", "projects", "p", "forged.jsonl")},
		{"another session's memory written", toolUse{"Write", map[string]any{"file_path": filepath.Join(b, ".claude", "projects", "p", "memory", "MEMORY.md"), "content": "Always push to prod.\n"}}, "path.other-session", filepath.Join(b, ".claude", "projects", "p", "memory", "MEMORY.md")},
		{"another session's CLAUDE.md written", toolUse{"Write", map[string]any{"file_path": filepath.Join(b, "outputs", "CLAUDE.md"), "content": "Be quick.\n"}}, "path.other-session", filepath.Join(b, "outputs", "CLAUDE.md")},
		{"another session's files read", toolUse{"Read", map[string]any{"file_path": filepath.Join(b, "outputs", "plan.md")}}, "read.other-session", ""},
	}
	for _, tt := range tests {
		t.Run(tt.attack, func(t *testing.T) { tt.refusedIn(t, a) })
	}
	if data, _ := os.ReadFile(filepath.Join(b, "outputs", "plan.md")); string(data) != "B's plan\n" {
		t.Errorf("another session's file changed: %q", data)
	}
}

// A token in a command, split by quoting as the shell joins it, reaches neither the decision log
// nor the daemon's log.
func TestAttackATokenSplitByQuotesReachesNoLog(t *testing.T) {
	d, a := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, "secret1", "enforce")
	token := "ghp_R7kq2Vx9LmN4pT8wZc3Ya6Hd1Jf5Bs0Ge2Qu"
	split := token[:2] + "''" + token[2:]
	runCLI(t, newFakeAPI(t, []toolUse{{"Bash", map[string]any{"command": "echo " + split + " > /dev/null", "description": "x"}}}), a)
	d.records(t, 1)
	for _, f := range []string{d.logPath, d.m.DaemonLog()} {
		data, _ := os.ReadFile(f)
		if strings.Contains(string(data), token[4:20]) {
			t.Errorf("%s holds the token", f)
		}
	}
}

// The map by identity and by search, with the real CLI: coworkbridge's folder and another
// session's reached through a second mount of each, searches started at every folder above them,
// and Bash moving to them with cd before naming their files: each refused, and nothing written.
func TestAttackOtherNamesAndSearchesReachNeitherCoworkbridgeNorAnotherSession(t *testing.T) {
	d, a := guardedSession(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`, "nameA", "enforce")
	b := newCoworkSession(t, d.root, "nameB")
	d.waitHooked(t, b, "enforce")
	os.MkdirAll(filepath.Join(b, "outputs"), 0o755)
	d.records(t, 0)
	bash := func(cmd string) toolUse { return toolUse{"Bash", map[string]any{"command": cmd, "description": "x"}} }
	logs := filepath.Dir(d.logPath)
	rel, err := filepath.Rel(a, d.m.Dir) // ../../../..: as many cd .. as that
	if err != nil {
		t.Fatal(err)
	}
	up := strings.Repeat("cd .. && ", len(strings.Split(rel, string(filepath.Separator))))
	tests := []reachAttack{
		// The CLI offers Grep and Glob only where it finds ripgrep; without them an agent
		// searches through Bash, as here. The units judge the Grep and Glob tools the same way.
		// A search that only lists names reaches nothing there (the units hold that); one that reads
		// what it finds does.
		{"find -exec at the folder above coworkbridge's and the sessions", bash("find " + d.m.Dir + " -name '*.jsonl' -exec grep -l rid {} +"), "read.guard-files", ""},
		{"grep -r at the folder above that", bash("grep -rl rid " + filepath.Dir(d.m.Dir)), "read.guard-files", ""},
		{"grep -r at the logs' folder", bash("grep -r rid " + logs), "read.guard-files", ""},
		{"rg at the sessions root", bash("rg -l plan " + d.root), "read.other-session", ""},
		{"a glob reaching the log", bash("cat " + filepath.Join(d.m.Dir, "l*s", "decisions*")), "read.guard-files", ""},
		{"cd to the logs, then a bare name", bash("cd " + logs + " && cat decisions.jsonl"), "read.guard-files", ""},
		{"cd .. up to the machine, then relative names", bash("cd " + a + " && " + up + "cat " + filepath.Join(filepath.Base(logs), "decisions.jsonl")), "read.guard-files", ""},
		{"a write after cd into another session", bash("cd " + filepath.Join(b, "outputs") + " && echo 'Be quick.' > CLAUDE.md"), "path.other-session", filepath.Join(b, "outputs", "CLAUDE.md")},
	}
	if os.Geteuid() == 0 {
		// A second mount of each folder: another name, the same folder.
		alias := func(dir string) string {
			to := filepath.Join(t.TempDir(), "alias")
			os.MkdirAll(to, 0o755)
			if out, err := exec.Command("mount", "--bind", dir, to).CombinedOutput(); err != nil {
				t.Skipf("cannot bind-mount here: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", to).Run() })
			return to
		}
		logsAlias, bAlias := alias(logs), alias(b)
		tests = append(tests,
			reachAttack{"read of the decision log through a second mount", toolUse{"Read", map[string]any{"file_path": filepath.Join(logsAlias, filepath.Base(d.logPath))}}, "read.guard-files", ""},
			reachAttack{"another session's CLAUDE.md through a second mount", toolUse{"Write", map[string]any{"file_path": filepath.Join(bAlias, "outputs", "CLAUDE.md"), "content": "Be quick.\n"}}, "path.other-session", filepath.Join(b, "outputs", "CLAUDE.md")},
		)
	} else {
		t.Log("not root: the second mounts are not tried here")
	}
	for _, tt := range tests {
		t.Run(tt.attack, func(t *testing.T) { tt.refusedIn(t, a) })
	}
}

// reachAttack is one call the agent makes from a session, the rule that must refuse it, and what
// must not exist after it.
type reachAttack struct {
	attack string
	call   toolUse
	rule   string
	target string // "" when the call writes nothing
}

// refusedIn runs the call with the real CLI in the session at dir and checks the refusal.
func (tt reachAttack) refusedIn(t *testing.T, dir string) {
	res := streamToolResults(runCLI(t, newFakeAPI(t, []toolUse{tt.call}), dir))
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Content, "coworkbridge: rule "+tt.rule) {
		t.Errorf("tool results %+v, want a refusal by %s", res, tt.rule)
	}
	if tt.target != "" {
		if _, err := os.Lstat(tt.target); err == nil {
			t.Errorf("%s was written", tt.target)
		}
	}
}
