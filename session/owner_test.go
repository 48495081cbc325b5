package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestASessionOfAnotherUserIsRefusedNotWorkedIn is privilege separation's rule: coworkbridge works
// in a session only as its own user (system mode's root starts that user's worker for it), so
// nothing made there ever needs a change of owner, and root is never tricked into giving one.
func TestASessionOfAnotherUserIsRefusedNotWorkedIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can make a folder of another user's")
	}
	dir := filepath.Join(t.TempDir(), "local_owner")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if !errors.Is(err, ErrNotOurs) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of another user's session: %v, want ErrNotOurs", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("something was made in the other user's session: %v", entries)
	}
}
