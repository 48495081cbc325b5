package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOwnedBelowRefusesALinkAboveTheSessionAndAnotherUsersFolder(t *testing.T) {
	me := os.Getuid()
	home := t.TempDir()
	own := filepath.Join(home, "Library", "Claude", "sessions", "a", "o", "local_x")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := OwnedBelow(home, own, me); err != nil {
		t.Fatalf("the user's own session: %v", err)
	}
	// A link above the sessions root, to another user's folders.
	other := filepath.Join(t.TempDir(), "victim")
	if err := os.MkdirAll(filepath.Join(other, "sessions", "a", "o", "local_v"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(home, "Library", "Other")); err != nil {
		t.Fatal(err)
	}
	if err := OwnedBelow(home, filepath.Join(home, "Library", "Other", "sessions", "a", "o", "local_v"), me); !errors.Is(err, ErrLink) {
		t.Errorf("through a link above the root: %v", err)
	}
	if err := OwnedBelow(home, filepath.Join(home, "..", "elsewhere"), me); err == nil {
		t.Error("a path outside the base was taken for one below it")
	}
	if err := OwnedBelow(home, own, me+4242); err == nil {
		t.Error("folders of this uid were taken for another uid's")
	}
}
