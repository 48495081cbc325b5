package classifier

import (
	"regexp"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier/effects"
)

// The patterns noProject and secretName replaced, kept as their specifications: the functions
// are held to them by the fuzz targets below, without compiling them in every hook process.
var (
	noProjectPattern  = regexp.MustCompile(`^(/|~|/Users|/home|~/(Library|Documents|Desktop|Downloads)|~/(Library|\.[^/]+)(/.*)?|/(etc|usr|var|bin|sbin|System|Library|Applications|private|opt|tmp)(/[^/]+)?)/?$`)
	secretNamePattern = regexp.MustCompile(`^(id_(rsa|dsa|ecdsa|ed25519)(_sk)?|credentials(\.[a-z]+)?|\.?env(\.[A-Za-z0-9_-]+)?)$`)
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

func TestSecretNameIsAKeyOrCredentialFilesBareName(t *testing.T) {
	holdsExactly(t, "secretName", effects.SecretName,
		[]string{"id_rsa", "id_ed25519_sk", "credentials", "credentials.json", ".env", "env", ".env.local", ".env.prod_2"},
		[]string{"id_rsa.pub", "credentials.JSON", "credentials.", ".env.", "..env", "environment", "my.env", ""})
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

func FuzzSecretNameAgreesWithItsPattern(f *testing.F) {
	for _, s := range []string{"id_rsa", "credentials.json", ".env.local", "env.", "id_dsa_sk", ".credentials"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := effects.SecretName(s), secretNamePattern.MatchString(s); got != want {
			t.Fatalf("secretName(%q) = %v, its pattern says %v", s, got, want)
		}
	})
}
