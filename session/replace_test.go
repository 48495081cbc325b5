package session

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceSwapsInTheNewContentAndLeavesNoTemporaryFile(t *testing.T) {
	tr := newTree(t)
	s := openTree(t, tr)
	writePlain(t, filepath.Join(tr.sessionDir, ".claude", "settings.json"), `{"old":1}`)
	if err := s.Replace(SettingsFile, []byte(`{"new":2}`), 0o640); err != nil {
		t.Fatal(err)
	}
	data, err := s.ReadFile(SettingsFile, 100)
	if err != nil || string(data) != `{"new":2}` {
		t.Fatalf("read %q, %v", data, err)
	}
	if fi, _ := s.Lstat(SettingsFile); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Join(tr.sessionDir, ".claude"))
	if len(entries) != 1 {
		t.Errorf(".claude holds %d entries, want settings.json alone: %v", len(entries), entries)
	}
}

// A repair must never undo a removal: a file that is gone stays gone, and nothing is left behind
// that would make the removal's last rmdir fail.
func TestReplaceNeverBringsBackAFileThatIsGone(t *testing.T) {
	tr := newTree(t)
	s := openTree(t, tr)
	err := s.Replace(SettingsFile, []byte(`{}`), 0o600)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Replace of a missing file = %v, want not-exist", err)
	}
	entries, _ := os.ReadDir(filepath.Join(tr.sessionDir, ".claude"))
	if len(entries) != 0 {
		t.Errorf(".claude holds %v after a refused replace", entries)
	}
	if err := os.Remove(filepath.Join(tr.sessionDir, ".claude")); err != nil {
		t.Errorf("the removal's rmdir fails: %v", err)
	}
}

func TestReplaceRefusesALinkAndTouchesNothingOutside(t *testing.T) {
	tr := newTree(t)
	s := openTree(t, tr)
	before := fingerprint(t, tr.outside)
	if err := os.Symlink(filepath.Join(tr.outside, "settings.json"), filepath.Join(tr.sessionDir, ".claude", "settings.json")); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace(SettingsFile, []byte(`{}`), 0o600); !errors.Is(err, ErrLink) {
		t.Errorf("Replace through a link = %v, want ErrLink", err)
	}
	if after := fingerprint(t, tr.outside); after != before {
		t.Error("the outside folder changed")
	}
}

func openTree(t *testing.T, tr tree) *Session {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(tr.sessionDir, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := Open(tr.sessionDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func writePlain(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
