package session

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tree is a session folder beside an "outside" folder that no session operation may touch.
type tree struct {
	sessionDir string
	outside    string
}

func newTree(t testing.TB) tree {
	t.Helper()
	base := t.TempDir()
	tr := tree{sessionDir: filepath.Join(base, "local_1"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{tr.sessionDir, tr.outside, filepath.Join(tr.sessionDir, "outputs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The outside folder holds a file of every name we use, so a followed link would find a target.
	for _, name := range []string{"settings.json", "events.jsonl", "alive", "decisions", "x.json"} {
		if err := os.WriteFile(filepath.Join(tr.outside, name), []byte("precious "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// fingerprint records everything observable about the outside folder.
func fingerprint(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const rid = "0123456789abcdef0123456789abcdef"

// everyOperation runs each Session operation on each of our names and returns the errors.
func everyOperation(s *Session) map[string]error {
	errs := map[string]error{}
	names := []string{ClaudeDir, SettingsFile, BridgeDir, SpoolFile, DecisionsDir, AliveFile, DecisionFile(rid)}
	for _, n := range names {
		_, errs["lstat "+n] = s.Lstat(n)
		_, errs["read "+n] = s.ReadFile(n, 1<<20)
		if f, err := s.OpenFile(n, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			_, err = f.WriteString("appended\n")
			f.Close()
			errs["append "+n] = err
		} else {
			errs["append "+n] = err
		}
		errs["write "+n] = s.WriteFile(n, []byte("written"), 0o600)
		errs["publish "+n] = s.Publish(n, []byte("published"), 0o600)
		_, errs["readdir "+n] = s.ReadDir(n, 100)
		errs["mkdir "+n] = s.MkdirAll(n, 0o700)
		errs["rename "+n] = s.Rename(n, ".claude/moved")
		s.Remove(".claude/moved")
	}
	for _, n := range names {
		errs["remove "+n] = s.Remove(n)
	}
	return errs
}

func TestOpenRefusesSymlinkedSessionFolder(t *testing.T) {
	tr := newTree(t)
	link := filepath.Join(filepath.Dir(tr.sessionDir), "local_link")
	if err := os.Symlink(tr.outside, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); !errors.Is(err, ErrLink) {
		t.Fatalf("Open(symlink) = %v, want ErrLink", err)
	}
	file := filepath.Join(tr.outside, "settings.json")
	if _, err := Open(file); !errors.Is(err, ErrNotDir) {
		t.Fatalf("Open(file) = %v, want ErrNotDir", err)
	}
}

// A link planted at any level of our paths, pointing outside or even inside the session, must
// make every operation through it fail, and nothing outside may change.
func TestPlantedLinksNeverReachOutside(t *testing.T) {
	plants := []struct {
		at     string
		target func(tr tree) string
	}{
		{ClaudeDir, func(tr tree) string { return tr.outside }},
		{ClaudeDir, func(tr tree) string { return "../outside" }},
		{ClaudeDir, func(tr tree) string { return "outputs" }}, // inside the session, still refused
		{BridgeDir, func(tr tree) string { return tr.outside }},
		{BridgeDir, func(tr tree) string { return "../../outside" }},
		{DecisionsDir, func(tr tree) string { return tr.outside }},
		{SettingsFile, func(tr tree) string { return filepath.Join(tr.outside, "settings.json") }},
		{SpoolFile, func(tr tree) string { return "../../../outside/events.jsonl" }},
		{AliveFile, func(tr tree) string { return filepath.Join(tr.outside, "alive") }},
		{DecisionFile(rid), func(tr tree) string { return filepath.Join(tr.outside, "x.json") }},
		{DecisionFile(rid), func(tr tree) string { return DecisionFile(rid) }}, // a loop
	}
	for _, p := range plants {
		t.Run(p.at+"->"+p.target(tree{outside: "/OUT"}), func(t *testing.T) {
			tr := newTree(t)
			full := filepath.Join(tr.sessionDir, filepath.FromSlash(p.at))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p.target(tr), full); err != nil {
				t.Fatal(err)
			}
			before := fingerprint(t, tr.outside)
			s, err := Open(tr.sessionDir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			errs := everyOperation(s)
			if after := fingerprint(t, tr.outside); after != before {
				t.Fatalf("outside changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			// Every operation whose path passes the link must have failed, except removing the
			// link itself, which is harmless.
			for op, err := range errs {
				name := op[strings.IndexByte(op, ' ')+1:]
				through := name == p.at || strings.HasPrefix(name, p.at+"/")
				if !through || op == "remove "+p.at || op == "lstat "+p.at { // describing or removing the link itself is harmless
					continue
				}
				if err == nil {
					t.Errorf("%s succeeded through the link at %s", op, p.at)
				}
			}
		})
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	tr := newTree(t)
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.MkdirAll(BridgeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tr.sessionDir, SpoolFile), 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := s.ReadFile(SpoolFile, 100); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v, want ErrNotRegular", err)
	}
	if _, err := s.OpenFile(SpoolFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenFile(fifo) = %v, want ErrNotRegular", err)
	}
	if err := s.WriteFile(SpoolFile, nil, 0o600); !errors.Is(err, ErrNotRegular) {
		t.Errorf("WriteFile over fifo = %v, want ErrNotRegular", err)
	}
}

func TestOperationsOnAnOrdinarySession(t *testing.T) {
	tr := newTree(t)
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ID() != "local_1" || s.Dir() != tr.sessionDir {
		t.Errorf("ID %q Dir %q", s.ID(), s.Dir())
	}
	if err := s.MkdirAll(DecisionsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.MkdirAll(DecisionsDir, 0o700); err != nil {
		t.Fatalf("MkdirAll must be idempotent: %v", err)
	}
	if err := s.WriteFile(SettingsFile, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(SettingsFile, []byte(`{"a":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := s.ReadFile(SettingsFile, 100)
	if err != nil || string(data) != `{"a":2}` {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	if fi, _ := s.Lstat(SettingsFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Join(tr.sessionDir, ClaudeDir))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".settings.json") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if _, err := s.ReadFile(SettingsFile, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the limit = %v, want ErrTooLarge", err)
	}
	f, err := s.OpenFile(SpoolFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("line\n")
	f.Close()
	if _, err := s.OpenFile(SpoolFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on an existing file = %v, want ErrExist", err)
	}
	if err := s.Rename(SettingsFile, SettingsFile+".old"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(SpoolFile, SettingsFile+".old"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Rename onto an existing name = %v, want ErrExist", err)
	}
	if err := s.Remove(SpoolFile); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lstat(SpoolFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Remove, Lstat = %v", err)
	}
}

func TestBadNamesAreRefused(t *testing.T) {
	tr := newTree(t)
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"", "/etc/passwd", "../outside/alive", ".claude/../../outside", "a//b", "./a", `a\b`, "."} {
		if _, err := s.ReadFile(name, 10); !errors.Is(err, ErrBadName) {
			t.Errorf("ReadFile(%q) = %v, want ErrBadName", name, err)
		}
		if err := s.WriteFile(name, nil, 0o600); !errors.Is(err, ErrBadName) {
			t.Errorf("WriteFile(%q) = %v, want ErrBadName", name, err)
		}
	}
}

func TestFileInPlaceOfFolderIsRefused(t *testing.T) {
	tr := newTree(t)
	if err := os.MkdirAll(filepath.Join(tr.sessionDir, ClaudeDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tr.sessionDir, BridgeDir), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.MkdirAll(DecisionsDir, 0o700); !errors.Is(err, ErrNotDir) {
		t.Errorf("MkdirAll = %v, want ErrNotDir", err)
	}
	if _, err := s.OpenFile(SpoolFile, os.O_RDONLY, 0); !errors.Is(err, ErrNotDir) {
		t.Errorf("OpenFile = %v, want ErrNotDir", err)
	}
}

// FuzzPlantedTrees builds arbitrary trees of folders, files, links and FIFOs at our names and
// checks that no sequence of operations changes anything outside the session.
func FuzzPlantedTrees(f *testing.F) {
	f.Add([]byte{0, 2, 1, 3, 5, 4})
	f.Add([]byte{1, 1, 2, 2, 3, 3, 6, 0})
	f.Add([]byte{6, 6, 5, 5, 4, 4})
	names := []string{ClaudeDir, SettingsFile, BridgeDir, SpoolFile, DecisionsDir, AliveFile, DecisionFile(rid)}
	f.Fuzz(func(t *testing.T, plan []byte) {
		if len(plan) > 32 {
			plan = plan[:32]
		}
		tr := newTree(t)
		// Every target stays inside the test's temp folder: planting goes through links too.
		targets := []string{tr.outside, "../outside", "../../outside/alive", "outputs", ".", filepath.Join(tr.outside, "settings.json")}
		for i := 0; i+1 < len(plan); i += 2 {
			name := names[int(plan[i])%len(names)]
			full := filepath.Join(tr.sessionDir, filepath.FromSlash(name))
			_ = os.MkdirAll(filepath.Dir(full), 0o755) // may fail where a link or file stands: fine
			switch k := plan[i+1]; k % 4 {
			case 0:
				_ = os.Mkdir(full, 0o755)
			case 1:
				// O_NONBLOCK: an earlier step may have planted a FIFO here.
				if pf, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o644); err == nil {
					pf.WriteString("planted")
					pf.Close()
				}
			case 2:
				_ = os.Symlink(targets[int(k/4)%len(targets)], full)
			case 3:
				_ = syscall.Mkfifo(full, 0o600)
			}
		}
		before := fingerprint(t, tr.outside)
		s, err := Open(tr.sessionDir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		everyOperation(s)
		if after := fingerprint(t, tr.outside); after != before {
			t.Fatalf("outside changed for plan %v", plan)
		}
	})
}

// withDecisions is a session tree, open, with its decisions folder made.
func withDecisions(t *testing.T) (tree, *Session) {
	t.Helper()
	tr := newTree(t)
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.MkdirAll(DecisionsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return tr, s
}

func TestPublishReplacesAtomicallyAndLeavesNoTemporaryFile(t *testing.T) {
	_, s := withDecisions(t)
	// Empty content is created in place where nothing stands, and replaces content like any other.
	for _, content := range []string{"", `{"x":1}`, "", "second"} {
		if err := s.Publish(DecisionFile(rid), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		data, err := s.ReadFile(DecisionFile(rid), 100)
		if err != nil || string(data) != content {
			t.Fatalf("after Publish(%q) read %q, %v", content, data, err)
		}
	}
	entries, err := s.ReadDir(DecisionsDir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != rid+".json" {
		t.Errorf("decisions folder holds %v, want only the decision", entries)
	}
}

func TestPublishingNothingAtAPlantedLinkIsRefusedAndLeavesItsTargetAlone(t *testing.T) {
	tr, s := withDecisions(t)
	before := fingerprint(t, tr.outside)
	link := filepath.Join(tr.sessionDir, filepath.FromSlash(DecisionFile(rid)))
	if err := os.Symlink(filepath.Join(tr.outside, "x.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(DecisionFile(rid), nil, 0o600); !errors.Is(err, ErrLink) {
		t.Errorf("Publish at a link = %v, want ErrLink", err)
	}
	if after := fingerprint(t, tr.outside); after != before {
		t.Errorf("publishing through a planted link changed the outside folder:\n%s\nwas\n%s", after, before)
	}
}

func TestReadDirIsBoundedAndReportsTheCut(t *testing.T) {
	tr := newTree(t)
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(tr.sessionDir, "outputs", fmt.Sprint(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.ReadDir("outputs", 5); err != nil || len(got) != 5 {
		t.Errorf("ReadDir at exactly the limit = %d entries, %v", len(got), err)
	}
	if got, err := s.ReadDir("outputs", 3); !errors.Is(err, ErrTooLarge) || len(got) != 3 {
		t.Errorf("ReadDir over the limit = %d entries, %v; want 3 and ErrTooLarge", len(got), err)
	}
}

// A folder swapped for a link after a handle has opened it is never passed through: the next use
// looks again, sees the link and refuses, and nothing outside the session changes.
func TestALinkSwappedInAfterTheCheckIsNeverFollowed(t *testing.T) {
	for _, swapped := range []string{ClaudeDir, BridgeDir, DecisionsDir} {
		t.Run(swapped, func(t *testing.T) {
			tr, s := handleInUse(t)
			swapForLink(t, tr, swapped)
			before := fingerprint(t, tr.outside)
			everyOperation(s)
			if after := fingerprint(t, tr.outside); after != before {
				t.Fatalf("outside changed through a link swapped in at %s:\nbefore\n%s\nafter\n%s", swapped, before, after)
			}
			fresh, err := Open(tr.sessionDir)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			if err := fresh.Publish(DecisionFile(rid), []byte("x"), 0o600); err == nil {
				t.Errorf("a new handle published through the link at %s", swapped)
			}
		})
	}
}

// A handle follows a folder removed and made again: it looks at every step each time, so the new
// folder is used, not the one it opened first.
func TestAHandleFindsAFolderMadeAgain(t *testing.T) {
	tr, s := handleInUse(t)
	bridge := filepath.Join(tr.sessionDir, filepath.FromSlash(BridgeDir))
	os.RemoveAll(bridge)
	if err := s.Publish(DecisionFile(rid), []byte("x"), 0o600); err == nil {
		t.Error("published into a folder that is gone")
	}
	if err := os.MkdirAll(filepath.Join(bridge, "decisions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(DecisionFile(rid), []byte("again"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(bridge, "decisions", rid+".json")); string(data) != "again" {
		t.Errorf("the folder made again holds %q, want the decision published after", data)
	}
}

// Within a hold, a folder swapped for a link is not looked at again, but the operations still
// run through the folder the handle checked: nothing outside changes. After the release the
// handle looks again and refuses the link.
func TestALinkSwappedInDuringAHoldIsNeverFollowed(t *testing.T) {
	for _, swapped := range []string{ClaudeDir, BridgeDir, DecisionsDir} {
		t.Run(swapped, func(t *testing.T) {
			tr, s := handleInUse(t)
			release := s.Hold()
			if err := s.Publish(DecisionFile(rid), []byte("in the hold"), 0o600); err != nil {
				t.Fatal(err)
			}
			full := swapForLink(t, tr, swapped)
			before := fingerprint(t, tr.outside)
			if err := s.Publish(DecisionFile(rid), []byte("still held"), 0o600); err != nil {
				t.Errorf("publishing in the hold, into the folder it checked: %v", err)
			}
			moved := filepath.Join(tr.sessionDir, filepath.FromSlash(DecisionFile(rid)))
			moved = strings.Replace(moved, full, full+".moved", 1)
			if data, _ := os.ReadFile(moved); string(data) != "still held" {
				t.Errorf("the folder checked holds %q, want the decision published in the hold", data)
			}
			everyOperation(s)
			release()
			if err := s.Publish(DecisionFile(rid), []byte("released"), 0o600); err == nil {
				t.Errorf("after the release, published through the link at %s", swapped)
			}
			if after := fingerprint(t, tr.outside); after != before {
				t.Fatalf("outside changed through a link swapped in at %s:\nbefore\n%s\nafter\n%s", swapped, before, after)
			}
		})
	}
}

// A hold looks at a folder once: made again during the hold, the new one is not used until the
// hold is released, and holds that overlap end together.
func TestAHoldLooksOnceAndTheReleaseLooksAgain(t *testing.T) {
	tr, s := handleInUse(t)
	outer := s.Hold()
	inner := s.Hold()
	if err := s.Publish(DecisionFile(rid), []byte("looked"), 0o600); err != nil {
		t.Fatal(err)
	}
	bridge := filepath.Join(tr.sessionDir, filepath.FromSlash(BridgeDir))
	if err := os.Rename(bridge, bridge+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(bridge, "decisions"), 0o755); err != nil {
		t.Fatal(err)
	}
	inner()
	inner() // a release called twice counts once
	if err := s.Publish(DecisionFile(rid), []byte("held"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(bridge+".old", "decisions", rid+".json")); string(data) != "held" {
		t.Errorf("during the hold the old folder holds %q, want the decision: the folder was looked at again", data)
	}
	outer()
	if err := s.Publish(DecisionFile(rid), []byte("released"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(bridge, "decisions", rid+".json")); string(data) != "released" {
		t.Errorf("after the release the new folder holds %q, want the decision", data)
	}
	if err := os.Rename(bridge, bridge+".older"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(bridge, "decisions"), 0o755); err != nil {
		t.Fatal(err)
	}
	again := s.Hold()
	defer again()
	if err := s.Publish(DecisionFile(rid), []byte("new hold"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(bridge, "decisions", rid+".json")); string(data) != "new hold" {
		t.Errorf("a new hold published into a folder looked at before it began: the new folder holds %q", data)
	}
}

// swapForLink moves the folder name of the session aside (to name.moved) and puts a link to the
// outside folder in its place; it returns the folder's path.
func swapForLink(t *testing.T, tr tree, name string) string {
	t.Helper()
	full := filepath.Join(tr.sessionDir, filepath.FromSlash(name))
	if err := os.Rename(full, full+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tr.outside, full); err != nil {
		t.Fatal(err)
	}
	return full
}

// handleInUse is a session with our decisions folder and a handle that has already published a
// decision through it, so that the handle holds every folder on the way open.
func handleInUse(t *testing.T) (tree, *Session) {
	t.Helper()
	tr := newTree(t)
	if err := os.MkdirAll(filepath.Join(tr.sessionDir, filepath.FromSlash(DecisionsDir)), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Publish(DecisionFile(rid), []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	return tr, s
}

func TestCommonDirIsTheDeepestFolderHoldingBothNames(t *testing.T) {
	for _, tt := range []struct{ a, b, want string }{
		{".claude/coworkbridge/staging/.ev-x", ".claude/coworkbridge/decisions/x.json", ".claude/coworkbridge"},
		{".claude/coworkbridge/events.jsonl", ".claude/coworkbridge/events-1.jsonl", ".claude/coworkbridge"},
		{".claude/settings.json", ".claude/coworkbridge/settings.json.old", ".claude"},
		{"a/b/c", "a/bc/d", "a"},
		{"a/x", "b/y", ""},
		{"x", "y/z", ""},
		{"x", "y", ""},
	} {
		if got := commonDir(tt.a, tt.b); got != tt.want {
			t.Errorf("commonDir(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
		if got := commonDir(tt.b, tt.a); got != tt.want {
			t.Errorf("commonDir(%q, %q) = %q, want %q", tt.b, tt.a, got, tt.want)
		}
	}
}
