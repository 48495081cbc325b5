package injector

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/session"
)

// newSession makes a Cowork-like session folder with the given files and opens it.
func newSession(t *testing.T, files map[string]string) (*session.Session, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "local_0000")
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := session.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

var now = time.Date(2026, 11, 20, 19, 30, 0, 0, time.UTC)

func TestEnsureCreatesSettingsAndOurFolder(t *testing.T) {
	s, dir := newSession(t, nil)
	out, err := Ensure(s, entry(t, managedconfig.Observe), testSchema(t), now)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Wrote || !out.Merge.Added || out.Running {
		t.Errorf("outcome %+v", out)
	}
	fi, err := os.Stat(filepath.Join(dir, ".claude", "settings.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("settings.json: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, ".claude", "coworkbridge", "decisions")); err != nil || !fi.IsDir() {
		t.Fatalf("decisions folder: %v", err)
	}
}

func TestEnsureWritesOnlyWhenSomethingChanged(t *testing.T) {
	s, dir := newSession(t, map[string]string{".claude/settings.json": "{}", ".claude/projects/x/y.jsonl": ""})
	e := entry(t, managedconfig.Enforce)
	out, err := Ensure(s, e, testSchema(t), now)
	if err != nil || !out.Wrote || !out.Running {
		t.Fatalf("first: %+v %v", out, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, ".claude", "settings.json")); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v: an existing file keeps its permissions", fi.Mode().Perm())
	}
	before, _ := os.Stat(filepath.Join(dir, ".claude", "settings.json"))
	out, err = Ensure(s, e, testSchema(t), now)
	if err != nil || out.Wrote || out.Merge.Changed {
		t.Fatalf("second: %+v %v", out, err)
	}
	after, _ := os.Stat(filepath.Join(dir, ".claude", "settings.json"))
	if !os.SameFile(before, after) || !before.ModTime().Equal(after.ModTime()) {
		t.Error("an unchanged file was rewritten")
	}
}

func TestEnsureSetsAsideAnUnparseableFile(t *testing.T) {
	const garbage = "{ \"model\": \"opus\", oops"
	s, dir := newSession(t, map[string]string{".claude/settings.json": garbage})
	out, err := Ensure(s, entry(t, managedconfig.Observe), testSchema(t), now)
	if err != nil {
		t.Fatal(err)
	}
	want := ".claude/settings.json.invalid-20261120T193000.000Z"
	if out.SetAside != want || !out.Wrote {
		t.Fatalf("outcome %+v", out)
	}
	kept, _ := os.ReadFile(filepath.Join(dir, want))
	if string(kept) != garbage {
		t.Errorf("the copy holds %q, want the original", kept)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	if !strings.Contains(string(cur), hookentry.Marker) {
		t.Error("the new settings lack our entry")
	}
	if r := out.Repairs(); len(r) != 1 || !strings.Contains(r[0], "set aside") {
		t.Errorf("repairs %v", r)
	}
}

func TestEnsureReplacesALinkedSettingsFileWithoutTouchingItsTarget(t *testing.T) {
	s, dir := newSession(t, nil)
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	os.WriteFile(target, []byte(`{"model":"x"}`), 0o644)
	if err := os.Symlink(target, filepath.Join(dir, ".claude", "settings.json")); err != nil {
		t.Fatal(err)
	}
	out, err := Ensure(s, entry(t, managedconfig.Observe), testSchema(t), now)
	if err != nil || !out.ReplacedLink || !out.Wrote {
		t.Fatalf("%+v %v", out, err)
	}
	if data, _ := os.ReadFile(target); string(data) != `{"model":"x"}` {
		t.Errorf("link target changed: %s", data)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, ".claude", "settings.json")); !fi.Mode().IsRegular() {
		t.Error("settings.json is still not a regular file")
	}
}

func TestEnsureRefusesALinkedBridgeFolder(t *testing.T) {
	s, dir := newSession(t, map[string]string{".claude/settings.json": "{}"})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, ".claude", "coworkbridge")); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(s, entry(t, managedconfig.Observe), testSchema(t), now); err == nil {
		t.Fatal("Ensure accepted a linked .claude/coworkbridge")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote outside the session: %v", entries)
	}
}

// Repair, for a session hooked before, creates neither settings.json nor our folder when it finds
// them gone: a removal of the session may be under way, and one file put back makes it fail.
func TestRepairCreatesNothingThatVanished(t *testing.T) {
	e := entry(t, managedconfig.Enforce)
	s, dir := newSession(t, nil)
	if _, err := Ensure(s, e, testSchema(t), now); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, ".claude", "settings.json"))
	if _, err := Repair(s, e, testSchema(t), now); !errors.Is(err, ErrVanished) {
		t.Errorf("settings.json gone: %v, want ErrVanished", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".claude", "settings.json")); err == nil {
		t.Error("settings.json was created again")
	}
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"model":"opus"}`), 0o600)
	os.RemoveAll(filepath.Join(dir, ".claude", "coworkbridge"))
	if _, err := Repair(s, e, testSchema(t), now); !errors.Is(err, ErrVanished) {
		t.Errorf("our folder gone: %v, want ErrVanished", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".claude", "coworkbridge")); err == nil {
		t.Error("our folder was created again")
	}
	os.MkdirAll(filepath.Join(dir, ".claude", "coworkbridge", "decisions"), 0o700)
	if out, err := Repair(s, e, testSchema(t), now); err != nil || !out.Merge.Added {
		t.Errorf("an existing file missing our entry is repaired: %+v %v", out, err)
	}
}
