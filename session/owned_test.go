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

// One Ownership over a rescan's sessions answers as OwnedBelow does for each, the folders above
// them looked at once: a folder it found owned never vouches for a link or another uid's folder
// beside it.
func TestOwnershipAnswersAsOwnedBelowForEverySessionOfAPass(t *testing.T) {
	me := os.Getuid()
	home := t.TempDir()
	org := filepath.Join(home, "Library", "Claude", "sessions", "a", "o")
	for _, s := range []string{"local_1", "local_2"} {
		if err := os.MkdirAll(filepath.Join(org, s), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.MkdirAll(filepath.Join(victim, "local_v"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(victim, "local_v"), filepath.Join(org, "local_link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(home, "Library", "Claude", "sessions", "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(org, "local_file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dirs := []string{
		filepath.Join(org, "local_1"), filepath.Join(org, "local_link"), filepath.Join(org, "local_2"),
		filepath.Join(home, "Library", "Claude", "sessions", "b", "local_v"), filepath.Join(org, "local_file"),
		filepath.Join(org, "local_missing"), filepath.Join(home, "..", "elsewhere"),
	}
	o := NewOwnership(home, me)
	for _, d := range dirs {
		want, got := OwnedBelow(home, d, me), o.Below(d)
		if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
			t.Errorf("%s: one pass's Ownership says %v, OwnedBelow %v", d, got, want)
		}
	}
	if err := NewOwnership(home, me+4242).Below(filepath.Join(org, "local_1")); err == nil {
		t.Error("folders of this uid were taken for another uid's")
	}
}

// BenchmarkOwnershipOfARescan checks a rescan's 100 session folders, six folders deep below the
// home, one by one (OwnedBelow) and as one pass (Ownership).
func BenchmarkOwnershipOfARescan(b *testing.B) {
	home := b.TempDir()
	org := filepath.Join(home, "Library", "Application Support", "Claude", "sessions", "a", "o")
	var dirs []string
	for i := range 100 {
		d := filepath.Join(org, "local_"+string(rune('a'+i/26))+string(rune('a'+i%26)))
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	me := os.Getuid()
	b.Run("each", func(b *testing.B) {
		for b.Loop() {
			for _, d := range dirs {
				if err := OwnedBelow(home, d, me); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100/1000, "µs/session")
	})
	b.Run("pass", func(b *testing.B) {
		for b.Loop() {
			o := NewOwnership(home, me)
			for _, d := range dirs {
				if err := o.Below(d); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100/1000, "µs/session")
	})
}
