package classifier

import (
	"regexp"
	"testing"
)

// noProjectPattern is the pattern noProject replaced, kept as its specification: the function is
// held to it by the fuzz target below, without compiling it in every hook process.
var (
	noProjectPattern = regexp.MustCompile(`^(/|~|/Users|/home|~/(Library|Documents|Desktop|Downloads)|~/(Library|\.[^/]+)(/.*)?|/(etc|usr|var|bin|sbin|System|Library|Applications|private|opt|tmp)(/[^/]+)?)/?$`)
)

// holdsExactly checks that fn holds for every one of yes and for none of no.
func holdsExactly(t *testing.T, name string, fn func(string) bool, yes, no []string) {
	t.Helper()
	for _, s := range yes {
		if !fn(s) {
			t.Errorf("%s(%q) = false, want true", name, s)
		}
	}
	for _, s := range no {
		if fn(s) {
			t.Errorf("%s(%q) = true, want false", name, s)
		}
	}
}

func TestNoProjectIsTheDiskAHomeOrASystemFolder(t *testing.T) {
	holdsExactly(t, "noProject", noProject,
		[]string{"/", "//", "~", "~/", "/Users", "/home/", "~/Downloads", "~/Library/Caches/x", "~/.config/gh", "/etc", "/usr/local", "/tmp/", "/opt/homebrew/"},
		[]string{"~/src/app", "/Users/ada/work", "/tmp/build/out", "~/.", "/usr/local/bin", "~/Library\n", "/srv", ""})
}

func FuzzNoProjectAgreesWithItsPattern(f *testing.F) {
	for _, p := range []string{"/", "~/Library/x", "~/.ssh", "/etc/x/", "/etc/x/y", "~/a", "~/.\n/x", "~/.a/\n", "//", "/var//"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := noProject(p), noProjectPattern.MatchString(p); got != want {
			t.Fatalf("noProject(%q) = %v, its pattern says %v", p, got, want)
		}
	})
}
