package effects

import (
	"regexp"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier/facts"
)

// The spellings of a handed path: operands, -f FILE, -fFILE, --opt=FILE, --opt FILE, @FILE,
// key=FILE and whatever follows --; a value with a space or a URL is no path.
func TestPathValuesReadEverySpellingOfAnArgument(t *testing.T) {
	cmd := &facts.Command{Name: "x", Args: []string{"a/b", "-f", "~/c", "-g/d", "--h=./e", "--i", "/f", "-T@~/g", "if=/h", "k=plain", "--url=https://x/y", "m n/o", "--", "-p/q"}}
	var got []string
	for _, pa := range PathValues(cmd) {
		got = append(got, pa.Opt+"|"+pa.Value)
	}
	want := []string{"|a/b", "-f|~/c", "-g|/d", "--h|./e", "--i|/f", "-T|~/g", "if=|/h", "|-p/q"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("value %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// secretNamePattern is the pattern SecretName replaced, kept as its specification: the function
// is held to it by the fuzz target below, without compiling it in every hook process.
var secretNamePattern = regexp.MustCompile(`^(id_(rsa|dsa|ecdsa|ed25519)(_sk)?|credentials(\.[a-z]+)?|\.?env(\.[A-Za-z0-9_-]+)?)$`)

func TestSecretNameIsAKeyOrCredentialFilesBareName(t *testing.T) {
	for s, want := range map[string]bool{
		"id_rsa": true, "id_ed25519_sk": true, "credentials": true, "credentials.json": true, ".env": true, "env": true,
		".env.local": true, ".env.prod_2": true,
		"id_rsa.pub": false, "credentials.JSON": false, "credentials.": false, ".env.": false, "..env": false,
		"environment": false, "my.env": false, "": false,
	} {
		if got := SecretName(s); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzSecretNameAgreesWithItsPattern(f *testing.F) {
	for _, s := range []string{"id_rsa", "credentials.json", ".env.local", "env.", "id_dsa_sk", ".credentials"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := SecretName(s), secretNamePattern.MatchString(s); got != want {
			t.Fatalf("secretName(%q) = %v, its pattern says %v", s, got, want)
		}
	})
}
