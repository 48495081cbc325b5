package classifier

import (
	"regexp"
	"testing"
)

// The patterns noProject and secretName replaced, kept as their specifications: the functions
// are held to them by the fuzz targets below, without compiling them in every hook process.
var (
	noProjectPattern  = regexp.MustCompile(`^(/|~|/Users|/home|~/(Library|Documents|Desktop|Downloads)|~/(Library|\.[^/]+)(/.*)?|/(etc|usr|var|bin|sbin|System|Library|Applications|private|opt|tmp)(/[^/]+)?)/?$`)
	secretNamePattern = regexp.MustCompile(`^(id_(rsa|dsa|ecdsa|ed25519)(_sk)?|credentials(\.[a-z]+)?|\.?env(\.[A-Za-z0-9_-]+)?)$`)
)

func TestNoProjectIsTheDiskAHomeOrASystemFolder(t *testing.T) {
	for _, p := range []string{"/", "//", "~", "~/", "/Users", "/home/", "~/Downloads", "~/Library/Caches/x", "~/.config/gh", "/etc", "/usr/local", "/tmp/", "/opt/homebrew/"} {
		if !noProject(p) {
			t.Errorf("noProject(%q) = false, want true", p)
		}
	}
	for _, p := range []string{"~/src/app", "/Users/ada/work", "/tmp/build/out", "~/.", "/usr/local/bin", "~/Library\n", "/srv", ""} {
		if noProject(p) {
			t.Errorf("noProject(%q) = true, want false", p)
		}
	}
}

func TestSecretNameIsAKeyOrCredentialFilesBareName(t *testing.T) {
	for _, s := range []string{"id_rsa", "id_ed25519_sk", "credentials", "credentials.json", ".env", "env", ".env.local", ".env.prod_2"} {
		if !secretName(s) {
			t.Errorf("secretName(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"id_rsa.pub", "credentials.JSON", "credentials.", ".env.", "..env", "environment", "my.env", ""} {
		if secretName(s) {
			t.Errorf("secretName(%q) = true, want false", s)
		}
	}
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
		if got, want := secretName(s), secretNamePattern.MatchString(s); got != want {
			t.Fatalf("secretName(%q) = %v, its pattern says %v", s, got, want)
		}
	})
}
