package injector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/internal/cadence"
	"github.com/coworkbridge/coworkbridge/internal/fswatch"
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

// calmSession is a hooked session, watched whole, that the last full rescan found as it should be.
func calmSession(t *testing.T, refuse string) (*Injector, string) {
	in, dir, _ := calmSessionRecorded(t, refuse)
	return in, dir
}

func calmSessionRecorded(t *testing.T, refuse string) (*Injector, string, *recorder) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "sessions")
	dir := makeSession(t, root, "local_calm", "{}")
	if err := os.MkdirAll(filepath.Join(dir, ".claude", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	in, err := New(testConfig(root, managedconfig.Observe), Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	w := fswatch.NewFake()
	w.Refuse = func(d string) bool { return d == filepath.Join(dir, refuse) }
	in.w = w
	in.rescan(true) // hooks it
	in.rescan(true) // finds it as it should be
	if !hasMode(dir, managedconfig.Observe) {
		t.Fatalf("setup: not hooked: %s", settingsOf(dir))
	}
	return in, dir, rec
}

// A session whose settings and folders the last full rescan found as they should be, with every
// folder watched, is looked at again in full only at the end of its rest, the rests doubling up
// to cadence.MaxRest full rescans: a change the watcher did not report waits for it. An event from
// the session brings it back to every rescan, and to the first rest.
func TestACalmSessionIsLookedAtInFullAtTheEndOfEachLongerRest(t *testing.T) {
	in, dir, rec := calmSessionRecorded(t, "none")
	settings := filepath.Join(dir, ".claude", "settings.json")
	rest := func(n int) {
		t.Helper()
		os.WriteFile(settings, []byte("{}"), 0o644) // unreported: our entry gone
		for i := 1; i < n; i++ {
			in.rescan(true)
			if hasMode(dir, managedconfig.Observe) {
				t.Fatalf("full rescan %d of a rest of %d looked at a calm session", i, n)
			}
		}
		in.rescan(true)
		if !hasMode(dir, managedconfig.Observe) {
			t.Fatalf("full rescan %d left a calm session's settings as they were changed: %s", n, settingsOf(dir))
		}
		in.rescan(true) // calm again
	}
	// The look that repaired it found it not calm; the next found it calm: the rests start over.
	for _, n := range []int{cadence.FirstRest, cadence.FirstRest} {
		rest(n)
	}
	os.WriteFile(settings, []byte("{}"), 0o644)
	in.handle(fswatch.Event{Name: filepath.Join(dir, ".claude", "todos"), Op: fswatch.Create})
	if rec.changed["local_calm"] == 0 {
		t.Error("an event in the session was not told on (the collector's calm depends on it)")
	}
	in.rescan(true)
	if !hasMode(dir, managedconfig.Observe) {
		t.Error("the full rescan after an event in the session did not look at it")
	}
}

// A session calm look after look rests twice as long each time, up to cadence.MaxRest full
// rescans: a change the watcher did not report, made just after a look, waits that long.
func TestASessionCalmForLongRestsTheLongest(t *testing.T) {
	in, dir, _ := calmSessionRecorded(t, "none")
	for range cadence.ToLongest() + 1 {
		in.rescan(true) // calm all along
	}
	for i := 0; in.live[dir].cadence.Resting(); i++ {
		if i > cadence.MaxRest {
			t.Fatal("the calm session was never looked at again")
		}
		in.rescan(true)
	}
	in.rescan(true) // the look
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644)
	n := 0
	for !hasMode(dir, managedconfig.Observe) && n <= 2*cadence.MaxRest {
		in.rescan(true)
		n++
	}
	if n != cadence.MaxRest {
		t.Errorf("a session calm for long was looked at again after %d full rescans, want %d", n, cadence.MaxRest)
	}
}

// A calm session the collector saw in use (Stir) is looked at in full by the next full rescan,
// even when more were stirred than the loop could take: then every session is.
func TestAStirredSessionIsLookedAtByTheNextFullRescan(t *testing.T) {
	for _, tc := range []struct {
		name string
		stir func(in *Injector, dir string)
	}{
		{"stirred", func(in *Injector, dir string) { in.Stir(dir) }},
		{"stirred past the queue", func(in *Injector, dir string) {
			for i := range wokenMax + 1 {
				in.Stir(fmt.Sprintf("/elsewhere/%d", i))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, dir, _ := calmSessionRecorded(t, "none")
			os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644) // unreported
			tc.stir(in, dir)
			in.rescan(true)
			if !hasMode(dir, managedconfig.Observe) {
				t.Errorf("the full rescan after a stir did not look at the session: %s", settingsOf(dir))
			}
		})
	}
}

// A new configuration has the next full rescan look at every session, calm or not.
func TestANewConfigurationEndsEveryRest(t *testing.T) {
	in, dir, _ := calmSessionRecorded(t, "none")
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644)
	cfg := in.cfg
	cfg.Mode = managedconfig.Enforce
	in.reconfigure(cfg)
	if !hasMode(dir, managedconfig.Enforce) {
		t.Errorf("a new configuration left a calm session unlooked at: %s", settingsOf(dir))
	}
}

// A session with a folder the watcher cannot cover, or after the watcher lost events, is looked
// at in full by every rescan.
func TestASessionNotWatchedWholeIsLookedAtByEveryRescan(t *testing.T) {
	for _, tc := range []struct {
		name, refuse string
		lost         bool
	}{
		{"its .claude not watched", ".claude", false},
		{"a skills folder not watched", ".claude/skills", false},
		{"events lost", "none", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, dir := calmSession(t, tc.refuse)
			os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte("{}"), 0o644)
			if tc.lost {
				in.eventsLost(errors.New("queue overflow"))
			} else {
				in.rescan(true)
			}
			if !hasMode(dir, managedconfig.Observe) {
				t.Error("the next full rescan did not look at the session")
			}
		})
	}
}

// A calm session removed with no event told (the watcher lost it) is forgotten by the next full
// rescan all the same: the listing of its org folder no longer holds it.
func TestACalmSessionRemovedUnseenIsForgottenByTheNextRescan(t *testing.T) {
	in, dir, rec := calmSessionRecorded(t, "none")
	if !in.live[dir].cadence.Calm() {
		t.Fatal("setup: the session is not calm")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	in.rescan(true)
	if in.live[dir] != nil || !rec.gone["local_calm"] {
		t.Error("a calm session removed unseen is still followed after a full rescan")
	}
}

// A watched folder gone without its event (events lost, or its path changed above it) leaves
// the table of watches by the longest rest's full rescans, or at once after the watcher says it
// lost events.
func TestAWatchedFolderGoneUntoldLeavesTheTableWithinTheLongestRest(t *testing.T) {
	for _, lost := range []bool{false, true} {
		in, dir, _ := calmSessionRecorded(t, "none")
		skills := filepath.Join(dir, ".claude", "skills")
		if !in.watched[skills] {
			t.Fatal("setup: the skills folder is not watched")
		}
		if err := os.Remove(skills); err != nil { // untold: the fake watcher reports nothing
			t.Fatal(err)
		}
		if lost {
			in.eventsLost(errors.New("queue overflow"))
			if in.watched[skills] {
				t.Error("a folder gone untold is still in the table after the watcher lost events")
			}
			continue
		}
		for range cadence.MaxRest {
			in.rescan(true)
		}
		if in.watched[skills] {
			t.Errorf("a folder gone untold is still in the table after %d full rescans", cadence.MaxRest)
		}
	}
}
