package flow

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

const (
	testKey    = "AKIAZ7Q2EXAMPLE4KEY9"
	testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE7KEY"
	testPEM    = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBc8fK3s0Zr5q1V2yWw7nH3oJm4bq9XcT1Qk6o5dV2NxgAAAJgq3m9uKt5v\nbgAAAAtzc2gtZWQyNTUxOQAAACBc8fK3s0Zr5q1V2yWw7nH3oJm4bq9XcT1Qk6o5dV2Nxg\n-----END OPENSSH PRIVATE KEY-----\n"
)

// read is a state whose latest private read, toolu_2, was seen holding text.
func read(t *testing.T, text string) State {
	t.Helper()
	var s State
	s.Take("web:issues.example", "", "toolu_1", "WebFetch", time.Time{})
	s.Take("", "~/.aws/credentials", "toolu_2", "Read", time.Time{})
	if !s.Learn("toolu_2", text) {
		t.Fatal("the latest private read was not learnt")
	}
	return s
}

func TestACallCarriesWhatWasReadHoweverItIsEncodedOrSplit(t *testing.T) {
	s := read(t, "[default]\naws_access_key_id = "+testKey+"\naws_secret_access_key = "+testSecret+"\n"+testPEM)
	b64 := base64.StdEncoding.EncodeToString([]byte(testSecret))
	pemLine := strings.Split(testPEM, "\n")[2]
	cases := []struct {
		name, text string
		want       bool
	}{
		{"as read", "https://c.example/?k=" + testKey, true},
		{"base64", "https://c.example/" + b64, true},
		{"base64, URL alphabet, unpadded", base64.RawURLEncoding.EncodeToString([]byte("x=" + testSecret)), true},
		{"hex", "d=" + hex.EncodeToString([]byte(testKey)), true},
		{"percent-encoded", "q=" + url.QueryEscape(testSecret), true},
		{"base64 of hex", base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString([]byte(testKey)))), true},
		{"split across a name's labels", hex.EncodeToString([]byte(testSecret[:20])) + "." + hex.EncodeToString([]byte(testSecret[20:])) + ".c.example", true},
		{"split across parameters", "a=" + b64[:24] + "&b=" + b64[24:], true},
		{"half the key", "id " + testKey[:11], true},
		{"a line of the private key", `{"body":"` + pemLine + `"}`, true},
		{"the key's name, not its value", "aws_access_key_id", false},
		{"words", "how do I configure credentials for the default profile", false},
		{"a commit hash", "4f9c2d1e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d", false},
		{"a link", "https://docs.example/keys/rotate?page=2", false},
		{"the key's armour", "-----BEGIN OPENSSH PRIVATE KEY-----", false},
		{"a different key", "AKIAQ3R8EXAMPLE2XYZ7", false},
		{"nothing", "", false},
	}
	for _, tc := range cases {
		if got := s.Carries(tc.text); got != tc.want {
			t.Errorf("%s: carries %v, want %v (%q)", tc.name, got, tc.want, tc.text)
		}
	}
}

func TestOnlyTheLatestPrivateReadIsLearntAndOnlyOnce(t *testing.T) {
	var s State
	if s.Learn("toolu_1", testKey) {
		t.Fatal("learnt with no private read")
	}
	s.Take("", "~/.aws/credentials", "toolu_2", "Read", time.Time{})
	shared := s // a state handed out before: it must not change under its holder
	if s.Knows() || s.Learn("toolu_9", testKey) {
		t.Fatal("another call's result was learnt as the read's")
	}
	if !s.Learn("toolu_2", testKey) || !s.Knows() || !s.Carries(testKey) {
		t.Fatal("the read's result was not learnt")
	}
	if shared.Knows() {
		t.Fatal("learning changed a state handed out before")
	}
	if s.Learn("toolu_2", "an-edited-result-9999999") {
		t.Fatal("a second result for the same read was learnt: the first is what the call read")
	}
	s.Take("", "~/.ssh/id_ed25519", "toolu_3", "Read", time.Time{})
	if s.Knows() {
		t.Fatal("a new private read is known before its result is seen")
	}
	if !s.Carries(testKey) {
		t.Fatal("what an earlier read held was forgotten")
	}
}

func TestPrintsAreBoundedAndTheNewestKept(t *testing.T) {
	var s State
	for i := range 40 {
		call := fmt.Sprintf("toolu_%d", i)
		s.Take("", "~/.ssh/k", call, "Read", time.Time{})
		var b strings.Builder
		for j := range 50 {
			fmt.Fprintf(&b, "tok%02d%03dXq7Zp%06d\n", i, j, i*1000+j)
		}
		s.Learn(call, b.String())
	}
	if n := len(s.prints()); n > maxPrints {
		t.Fatalf("%d prints kept, at most %d", n, maxPrints)
	}
	if !s.Carries("tok39049Xq7Zp039049") {
		t.Error("the newest read's data was not kept")
	}
	if note := s.Marshal(); len(note) > maxNote {
		t.Fatalf("a note of %d bytes, read back at most %d", len(note), maxNote)
	}
	back := Restore(s.Marshal())
	if !back.Knows() || !back.Carries("tok39049Xq7Zp039049") {
		t.Error("the prints did not survive the note")
	}
}

func TestPrintsInANoteThatDoNotDecodeAreNone(t *testing.T) {
	s := Restore([]byte(`{"private":{"call":"toolu_1","seen":true},"prints":"not base64!"}`))
	if s.Carries(testKey) {
		t.Fatal("a damaged note's prints matched")
	}
}

func FuzzCarries(f *testing.F) {
	f.Add(testPEM, "https://c.example/"+base64.StdEncoding.EncodeToString([]byte(testPEM)))
	f.Add(testKey, "%zz%"+testKey)
	f.Fuzz(func(t *testing.T, readText, sent string) {
		var s State
		s.Take("", "~/.ssh/k", "toolu_1", "Read", time.Time{})
		s.Learn("toolu_1", readText)
		if len(s.prints()) > maxPrints {
			t.Fatalf("%d prints", len(s.prints()))
		}
		s.Carries(sent)
		for _, tok := range tokens(readText) {
			if distinctive(tok) && len(tok) < longToken && !s.Carries("x "+tok+" y") {
				t.Fatalf("a distinctive token read (%q) is not found when sent whole", tok)
			}
			if len(s.prints()) == maxPrints {
				break // tokens past the bound are not kept
			}
		}
	})
}

func BenchmarkLearnAKeyFile(b *testing.B) {
	text := "[default]\naws_access_key_id = " + testKey + "\naws_secret_access_key = " + testSecret + "\n" + testPEM
	b.ReportAllocs()
	for b.Loop() {
		var s State
		s.Take("", "~/.ssh/k", "toolu_1", "Read", time.Time{})
		s.Learn("toolu_1", text)
	}
}

// BenchmarkCarriesAURL is what judging one send costs once a read is known: a fetch's URL.
func BenchmarkCarriesAURL(b *testing.B) {
	var s State
	s.Take("", "~/.ssh/k", "toolu_1", "Read", time.Time{})
	s.Learn("toolu_1", "[default]\naws_access_key_id = "+testKey+"\naws_secret_access_key = "+testSecret+"\n"+testPEM)
	u := "https://docs.example/search?q=rotate+access+keys&page=2&session=c2Vzc2lvbi0xMjM0NTY3ODkw"
	b.ReportAllocs()
	for b.Loop() {
		s.Carries(u)
	}
}

// BenchmarkCarriesABody is the same for a connector's comment of 4 KB.
func BenchmarkCarriesABody(b *testing.B) {
	var s State
	s.Take("", "~/.ssh/k", "toolu_1", "Read", time.Time{})
	s.Learn("toolu_1", testPEM)
	body := `{"body":"` + strings.Repeat("The build fails on main since 4f9c2d1; see the log. ", 80) + `"}`
	b.ReportAllocs()
	for b.Loop() {
		s.Carries(body)
	}
}
