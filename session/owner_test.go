package session

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRootGivesWhatItMakesInASessionToTheSessionsOwner is system mode's rule: the daemon runs as
// root, and a settings file or decision it made as root would be out of the user's own reach.
func TestRootGivesWhatItMakesInASessionToTheSessionsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can give a file away")
	}
	const uid, gid = 65534, 65534
	dir := filepath.Join(t.TempDir(), "local_owner")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	steps := []struct {
		name string
		do   func() error
	}{
		{".claude/coworkbridge/decisions", func() error { return s.MkdirAll(".claude/coworkbridge/decisions", 0o700) }},
		{".claude/settings.json", func() error { return s.WriteFile(".claude/settings.json", []byte("{}"), 0o600) }},
		{".claude/coworkbridge/decisions/a.json", func() error { return s.Publish(".claude/coworkbridge/decisions/a.json", []byte("x"), 0o600) }},
		{".claude/coworkbridge/decisions/b.json", func() error { return s.Publish(".claude/coworkbridge/decisions/b.json", nil, 0o600) }},
		{".claude/coworkbridge/alive", func() error {
			return s.PublishDated(".claude/coworkbridge/alive", []byte("1\n"), 0o644, time.Now())
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		fi, err := os.Lstat(filepath.Join(dir, st.name))
		if err != nil {
			t.Fatal(err)
		}
		if o := fi.Sys().(*syscall.Stat_t); o.Uid != uid || o.Gid != gid {
			t.Errorf("%s is owned by %d:%d, want the session's owner %d:%d", st.name, o.Uid, o.Gid, uid, gid)
		}
	}
	for _, d := range []string{".claude", ".claude/coworkbridge"} {
		fi, _ := os.Lstat(filepath.Join(dir, d))
		if o := fi.Sys().(*syscall.Stat_t); o.Uid != uid {
			t.Errorf("folder %s is owned by uid %d, want %d", d, o.Uid, uid)
		}
	}
}
