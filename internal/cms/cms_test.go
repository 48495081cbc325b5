package cms

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The fixtures were made with openssl cms -sign (DER, and -stream for indefinite-length BER)
// from testdata/profile.xml, signed by a certificate for "Example Corp MDM" of "Example Corp".
func TestParseTakesTheSignedProfileOutOfDERAndStreamedBER(t *testing.T) {
	want := read(t, "profile.xml")
	for _, name := range []string{"profile.signed.der", "profile.streamed.ber"} {
		m, err := Parse(read(t, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(m.Content, want) {
			t.Errorf("%s: content is %d bytes, not the profile's %d", name, len(m.Content), len(want))
		}
		if len(m.Signers) != 1 || m.Signers[0] != "Example Corp MDM (Example Corp)" {
			t.Errorf("%s: signers %q, want the one certificate by its name", name, m.Signers)
		}
	}
}

func TestParseSaysWhyAMessageHoldsNoProfile(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
		data             []byte
	}{
		{name: "detached signature", file: "profile.detached.der", want: "detached"},
		{name: "encrypted profile", file: "profile.encrypted.der", want: "not signed data"},
		{name: "property list", data: []byte("<?xml version=\"1.0\"?><plist/>"), want: "not a CMS message"},
		{name: "cut short", data: read(t, "profile.signed.der")[:2000], want: "truncated"},
		{name: "endless nesting", data: bytes.Repeat([]byte{0x30, 0x80}, 1000), want: "nested deeper"},
		{name: "huge length", data: []byte{0x30, 0x85, 1, 2, 3, 4, 5}, want: "too large"},
		{name: "primitive indefinite", data: []byte{0x04, 0x80, 0, 0}, want: "indefinite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data
			if tc.file != "" {
				data = read(t, tc.file)
			}
			_, err := Parse(data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestLooksTellsCMSFromPropertyListsAndJSON(t *testing.T) {
	if !Looks(read(t, "profile.signed.der")) || !Looks(read(t, "profile.streamed.ber")) {
		t.Error("a signed profile does not look like CMS")
	}
	for _, s := range []string{"<?xml", "bplist00", "{\"version\":1}", "0"} {
		if Looks([]byte(s)) {
			t.Errorf("%q looks like CMS", s)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(read(f, "profile.signed.der"))
	f.Add(read(f, "profile.streamed.ber"))
	f.Add(read(f, "profile.encrypted.der"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err == nil && len(m.Content) > len(data) {
			t.Fatalf("content of %d bytes from a message of %d", len(m.Content), len(data))
		}
	})
}
