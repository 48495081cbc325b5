package decisions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/session"
)

const rid = "00112233445566778899aabbccddeeff"

// newSession makes a session folder with our folder in place, beside a folder that must never change.
func newSession(t *testing.T) (*session.Session, string, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "local_1")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(dir, ".claude", "coworkbridge", "decisions"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "target"), []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir, outside
}

func assertOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	entries, _ := os.ReadDir(outside)
	data, _ := os.ReadFile(filepath.Join(outside, "target"))
	if len(entries) != 1 || string(data) != "precious" {
		t.Fatalf("the folder outside the session changed: %d entries, target %q", len(entries), data)
	}
}

func TestWriteRendersEachDecisionForTheHook(t *testing.T) {
	tests := []struct {
		d    claudehook.Decision
		want string // substring; "" means an empty file
	}{
		{claudehook.Allow, ""},
		{claudehook.Deny, `"permissionDecision":"deny","permissionDecisionReason":"coworkbridge: no"`},
		{claudehook.Ask, `"permissionDecision":"ask"`},
	}
	for _, tt := range tests {
		t.Run(string(tt.d), func(t *testing.T) {
			s, dir, _ := newSession(t)
			if err := Write(s, rid, tt.d, "coworkbridge: no", ""); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(session.DecisionFile(rid))))
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && len(data) != 0 || !strings.Contains(string(data), tt.want) {
				t.Errorf("decision file = %q, want %q", data, tt.want)
			}
			if strings.Count(string(data), "\n") > 1 {
				t.Errorf("the hook reads one line; decision has %q", data)
			}
		})
	}
}

func TestWriteRefusesABadRequestID(t *testing.T) {
	for _, bad := range []string{"", "../../outside/target", "00112233445566778899AABBCCDDEEFF", rid + "0", rid[:31] + "/"} {
		s, dir, _ := newSession(t)
		if err := Write(s, bad, claudehook.Deny, "x", ""); !errors.Is(err, ErrBadRID) {
			t.Errorf("Write(%q) = %v, want ErrBadRID", bad, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(dir, ".claude", "coworkbridge", "decisions")); len(entries) != 0 {
			t.Errorf("Write(%q) left %v", bad, entries)
		}
	}
}

func TestLinksAreRefusedAndNothingIsWrittenOutside(t *testing.T) {
	plants := []struct{ at string }{
		{".claude/coworkbridge/decisions"},
		{".claude/coworkbridge/decisions/" + rid + ".json"},
		{".claude/coworkbridge/alive"},
		{".claude/coworkbridge"},
	}
	for _, p := range plants {
		t.Run(p.at, func(t *testing.T) {
			s, dir, outside := newSession(t)
			full := filepath.Join(dir, filepath.FromSlash(p.at))
			if err := os.RemoveAll(full); err != nil {
				t.Fatal(err)
			}
			target := outside
			if strings.HasSuffix(p.at, ".json") || strings.HasSuffix(p.at, "alive") {
				target = filepath.Join(outside, "target")
			}
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			errDecision := Write(s, rid, claudehook.Deny, "x", "")
			_, errAlive := WriteAlive(s, time.Now().Add(time.Minute))
			if _, err := Sweep(s, time.Now().Add(time.Hour), time.Second, time.Second, nil); err != nil {
				t.Logf("sweep: %v", err)
			}
			assertOutsideUntouched(t, outside)
			through := func(name string) bool { return name == p.at || strings.HasPrefix(name, p.at+"/") }
			if through(session.DecisionFile(rid)) && errDecision == nil {
				t.Error("a decision was written through the link")
			}
			if through(session.AliveFile) && errAlive == nil {
				t.Error("the alive lease was written through the link")
			}
		})
	}
}

// leaseDated fails unless the lease's modification time is until: hooks test it newer than
// their own event file instead of reading the clock.
func leaseDated(t *testing.T, dir string, until time.Time) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, ".claude", "coworkbridge", "alive"))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(until) {
		t.Errorf("the lease is dated %v, want the time it runs to, %v", fi.ModTime(), until)
	}
}

func TestAliveLeaseRoundTripsAndRemovalMakesItAbsent(t *testing.T) {
	s, dir, outside := newSession(t)
	until := time.Unix(2_000_000_000, 0)
	if _, err := WriteAlive(s, until); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ".claude", "coworkbridge", "alive"))
	if string(raw) != "2000000000\n" {
		t.Errorf("alive file = %q; the hook reads one line of digits", raw)
	}
	if got, err := ReadAlive(s); err != nil || !got.Equal(until) {
		t.Errorf("ReadAlive = %v, %v", got, err)
	}
	leaseDated(t, dir, until)
	// Renewed in place: the date follows the content.
	later := until.Add(time.Minute)
	if _, err := WriteAlive(s, later); err != nil {
		t.Fatal(err)
	}
	leaseDated(t, dir, later)
	if err := RemoveAlive(s); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAlive(s); err != nil {
		t.Errorf("removing an absent lease = %v, want nil", err)
	}
	// A link planted at the name is removed too, never its target.
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(dir, ".claude", "coworkbridge", "alive")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAlive(s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".claude", "coworkbridge", "alive")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("planted lease link still there: %v", err)
	}
	assertOutsideUntouched(t, outside)
}

func TestSweepRemovesOnlyOldFilesWithOurNames(t *testing.T) {
	s, dir, outside := newSession(t)
	bridge := filepath.Join(dir, ".claude", "coworkbridge")
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name -> swept
		"decisions/" + rid + ".json":                      true,
		"decisions/ffffffffffffffffffffffffffffffff.json": false, // fresh
		"decisions/notes.json":                            false, // not a request id
		"decisions/" + session.TempPrefix + "x-1":         true,
		".ev-" + rid:         true,
		".ev-" + rid + ".p":  true,
		"staging/.ev-" + rid: true,
		"staging/notes":      false, // not a name of ours
		"events.jsonl":       false,
		"alive":              false,
	}
	for name := range files {
		p := filepath.Join(bridge, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if name != "decisions/ffffffffffffffffffffffffffffffff.json" { // all old but the fresh one
			os.Chtimes(p, old, old)
		}
	}
	// An old link with a decision's name is not ours to remove.
	link := filepath.Join(bridge, "decisions", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee.json")
	if err := os.Symlink(filepath.Join(outside, "target"), link); err != nil {
		t.Fatal(err)
	}
	res, err := Sweep(s, time.Now(), 20*time.Second, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Unconsumed != 1 || res.Temporary != 4 {
		t.Errorf("Sweep = %+v, want 1 unconsumed and 4 temporary", res)
	}
	for name, swept := range files {
		_, err := os.Lstat(filepath.Join(bridge, filepath.FromSlash(name)))
		if gone := errors.Is(err, os.ErrNotExist); gone != swept {
			t.Errorf("%s: removed %v, want %v", name, gone, swept)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the link was removed: %v", err)
	}
	assertOutsideUntouched(t, outside)
}

func TestSweepOfASessionWithoutOurFolderIsQuiet(t *testing.T) {
	s, dir, _ := newSession(t)
	os.RemoveAll(filepath.Join(dir, ".claude"))
	if res, err := Sweep(s, time.Now(), time.Second, time.Second, nil); err != nil || res != (SweepResult{}) {
		t.Errorf("Sweep = %+v, %v", res, err)
	}
}

// A renewal rewrites the lease in place: no new entry appears in our folder (one appearing while
// Cowork deletes the session would make the deletion fail). A lease hard-linked to a file outside
// the session is replaced, never written through.
func TestTheLeaseIsRenewedInPlaceButNeverThroughAHardLink(t *testing.T) {
	s, dir, _ := newSession(t)
	if _, err := WriteAlive(s, time.Unix(2000000000, 0)); err != nil {
		t.Fatal(err)
	}
	lease := filepath.Join(dir, ".claude", "coworkbridge", "alive")
	before, _ := os.Stat(lease)
	if _, err := WriteAlive(s, time.Unix(2000000100, 0)); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(lease)
	if !os.SameFile(before, after) {
		t.Error("the renewal replaced the lease instead of rewriting it")
	}
	if until, err := ReadAlive(s); err != nil || until.Unix() != 2000000100 {
		t.Errorf("lease %v %v", until, err)
	}
	outside := filepath.Join(t.TempDir(), "precious")
	os.WriteFile(outside, []byte("2000000000\n"), 0o600)
	os.Remove(lease)
	if err := os.Link(outside, lease); err != nil {
		t.Skip(err)
	}
	if _, err := WriteAlive(s, time.Unix(2000000200, 0)); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(outside); string(data) != "2000000000\n" {
		t.Errorf("the file outside the session was written through a hard link: %q", data)
	}
	if until, _ := ReadAlive(s); until.Unix() != 2000000200 {
		t.Errorf("the lease was not renewed: %v", until)
	}
}

func TestAQuarantineWrittenIsReadBackAndAnAbsentOneIsNone(t *testing.T) {
	s := openChannelForTest(t)
	if until, _, err := ReadQuarantine(s); err != nil || !until.IsZero() {
		t.Fatalf("absent: %v %v", until, err)
	}
	want := time.Unix(1800000000, 0)
	if err := WriteQuarantine(s, want, "settings set hooks.Stop"); err != nil {
		t.Fatal(err)
	}
	until, why, err := ReadQuarantine(s)
	if err != nil || !until.Equal(want) || why != "settings set hooks.Stop" {
		t.Fatalf("%v %q %v", until, why, err)
	}
	os.WriteFile(filepath.Join(s.Dir(), filepath.FromSlash(session.QuarantineFile)), []byte("garbage"), 0o600)
	if _, _, err := ReadQuarantine(s); err == nil {
		t.Error("garbage read as a quarantine")
	}
}

func openChannelForTest(t *testing.T) *session.Session {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, filepath.FromSlash(session.BridgeDir)), 0o700)
	s, err := session.OpenOwn(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A lease renewed in place is known by the stamp WriteAlive returns until anyone changes it: a
// rewrite in place, a mode change or a second name each give it another stamp.
func TestALeaseKeepsTheStampItWasWrittenWithUntilChanged(t *testing.T) {
	s, dir, _ := newSession(t)
	until := time.Unix(2_000_000_000, 0)
	if _, err := WriteAlive(s, until); err != nil { // published: the next write renews in place
		t.Fatal(err)
	}
	alive := filepath.Join(dir, ".claude", "coworkbridge", "alive")
	stampNow := func() session.Stamp {
		fi, err := os.Lstat(alive)
		if err != nil {
			t.Fatal(err)
		}
		return session.StampOf(fi)
	}
	for _, change := range []struct {
		name string
		do   func() error
	}{
		{"rewritten in place, same length and date", func() error {
			if err := os.WriteFile(alive, []byte("2000000001\n"), 0o600); err != nil {
				return err
			}
			return os.Chtimes(alive, until, until)
		}},
		{"its mode changed", func() error { return os.Chmod(alive, 0o644) }},
		{"given a second name", func() error { return os.Link(alive, alive+".2") }},
	} {
		st, err := WriteAlive(s, until)
		if err != nil || st == (session.Stamp{}) {
			t.Fatalf("%s: renewal in place gave stamp %v, %v", change.name, st, err)
		}
		if now := stampNow(); now != st {
			t.Fatalf("%s: the lease as written has stamp %v, WriteAlive said %v", change.name, now, st)
		}
		if _, read, err := ReadAliveStamped(s); err != nil || read != st {
			t.Fatalf("%s: ReadAliveStamped = %v, %v, want the written stamp", change.name, read, err)
		}
		time.Sleep(10 * time.Millisecond) // a change time that can differ on a coarse clock
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		if stampNow() == st {
			t.Errorf("%s: the lease kept the stamp it was written with", change.name)
		}
		os.Remove(alive + ".2")
		os.Chmod(alive, 0o600)
	}
}

// A folder a sweep found nothing in to wait for is not listed again until it changes; one that
// holds a file not yet old enough is listed at every sweep until the file goes.
func TestASweepListsAgainOnlyAFolderThatChangedOrHoldsWhatItWaitsFor(t *testing.T) {
	s, dir, _ := newSession(t)
	decisionsDir := filepath.Join(dir, ".claude", "coworkbridge", "decisions")
	if err := os.MkdirAll(decisionsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var swept Swept
	now := time.Now()
	sweepAt := func(at time.Time) SweepResult {
		t.Helper()
		res, err := Sweep(s, at, 20*time.Second, time.Minute, &swept)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	sweepAt(now)
	if swept.Unchanged(session.DecisionsDir, stampOf(t, decisionsDir)) {
		t.Fatal("a folder made just now was noted as swept: an entry made in the same tick would be missed")
	}
	sweepAt(now.Add(session.QuietAfter + time.Second))
	if !swept.Unchanged(session.DecisionsDir, stampOf(t, decisionsDir)) {
		t.Fatal("an empty decisions folder left alone was not noted as swept")
	}
	// A decision written after: the folder changed, so it is listed, and waited for.
	answer := filepath.Join(decisionsDir, "ffffffffffffffffffffffffffffffff.json")
	if err := os.WriteFile(answer, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := sweepAt(now); res.Unconsumed != 0 {
		t.Fatalf("a fresh decision was swept: %+v", res)
	}
	if swept.Unchanged(session.DecisionsDir, stampOf(t, decisionsDir)) {
		t.Fatal("a folder holding a decision not yet old enough was noted as swept")
	}
	// Nothing changes in the folder, but the decision ages: the next sweep still finds it.
	if res := sweepAt(now.Add(time.Hour)); res.Unconsumed != 1 {
		t.Fatalf("an unread decision was not swept once old: %+v", res)
	}
	if _, err := os.Lstat(answer); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old decision is still there: %v", err)
	}
}

func stampOf(t *testing.T, path string) session.Stamp {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return session.StampOf(fi)
}
