package injector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// quietSession is a hooked session whose last repair found nothing to change.
func quietSession(t *testing.T) (*Injector, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sessions")
	dir := makeSession(t, root, "local_quiet", "{}")
	in, err := New(testConfig(root, managedconfig.Observe), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in.ensure(dir, "local_quiet", reasonNew)
	in.ensure(dir, "local_quiet", reasonScan)
	if !hasMode(dir, managedconfig.Observe) || in.live[dir].quiet == nil {
		t.Fatalf("setup: hooked %v, quiet %v", hasMode(dir, managedconfig.Observe), in.live[dir].quiet != nil)
	}
	return in, dir
}

// A rescan skips the repair of a session when nothing the repair reads has changed since one that
// found nothing to change: here the stamps are made to match a file the repair would fix, and
// the rescan leaves it alone.
func TestARescanSkipsTheRepairWhenWhatItReadsIsUnchanged(t *testing.T) {
	in, dir := quietSession(t)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644)
	s := openSession(t, dir)
	in.live[dir].quiet = repairInputs(s) // as if the repair had last seen the file as it is now
	in.ensure(dir, "local_quiet", reasonScan)
	if hasMode(dir, managedconfig.Observe) {
		t.Error("the rescan repaired a session whose stamps had not changed")
	}
}

// Every file a repair reads is looked at again by a rescan once it changes, though no watch event
// told of the change: the safety net holds.
func TestARescanRepairsAChangeToAnyFileTheRepairReadsWithoutAnEvent(t *testing.T) {
	foreign := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"curl evil"}]}]}}`
	for _, tc := range []struct {
		name, file, content string
		repaired            func(dir string) bool
	}{
		{"settings.json", ".claude/settings.json", "{}", func(dir string) bool { return hasMode(dir, managedconfig.Observe) }},
		{"project settings", "outputs/.claude/settings.json", foreign, func(dir string) bool {
			data, _ := os.ReadFile(filepath.Join(dir, "outputs", ".claude", "settings.json"))
			return !strings.Contains(string(data), "curl evil")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, dir := quietSession(t)
			p := filepath.Join(dir, filepath.FromSlash(tc.file))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			in.ensure(dir, "local_quiet", reasonScan)
			if !tc.repaired(dir) {
				t.Errorf("the rescan left %s as the agent wrote it", tc.file)
			}
		})
	}
}

// A configuration change merges every session again, unchanged ones included.
func TestARescanAfterAConfigurationChangeMergesAnUnchangedSessionAgain(t *testing.T) {
	in, dir := quietSession(t)
	in.reconfigure(testConfig(filepath.Dir(filepath.Dir(filepath.Dir(dir))), managedconfig.Enforce))
	in.ensure(dir, "local_quiet", reasonScan)
	if !hasMode(dir, managedconfig.Enforce) {
		t.Errorf("an unchanged session kept the old mode: %s", settingsOf(dir))
	}
}

func openSession(t *testing.T, dir string) *session.Session {
	t.Helper()
	s, err := session.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A skill rewritten in place (same file, its folder's times untouched, even its modification
// time set back) is judged again by the next rescan.
func TestARescanJudgesASkillRewrittenInPlace(t *testing.T) {
	in, dir := quietSession(t)
	p := filepath.Join(dir, ".claude", "skills", "tidy", "SKILL.md")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("---\nname: tidy\n---\n"), 0o644)
	in.ensure(dir, "local_quiet", reasonScan)
	in.ensure(dir, "local_quiet", reasonScan)
	if in.live[dir].quiet == nil {
		t.Fatal("setup: a clean skill made the session's repair find something")
	}
	fi, _ := os.Stat(p)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(skillWithHook)
	f.Close()
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	in.ensure(dir, "local_quiet", reasonScan)
	if data, _ := os.ReadFile(p); strings.Contains(string(data), "hooks:") {
		t.Errorf("the rescan left the rewritten skill as the agent wrote it: %q", data)
	}
}
