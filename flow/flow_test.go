package flow

import (
	"strings"
	"testing"
	"time"
)

func TestASendIsLinedWithTheLastUntrustedIntakeAndPrivateRead(t *testing.T) {
	var s State
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	if got := s.Line("evil.example", ""); got != "send to=evil.example" {
		t.Fatalf("a send in a fresh session: %q", got)
	}
	s.Take("web:docs.example", "", "toolu_1", "WebFetch", at)
	s.Take("", "/Users/a/.aws/credentials", "toolu_2", "Read", at)
	s.Take("web:attacker.example", "", "toolu_3", "WebFetch", at) // the latest intake counts
	got := s.Line("mcp:github", "read")
	want := "send to=mcp:github private=toolu_2:/Users/a/.aws/credentials untrusted=toolu_3:web:attacker.example carries=read"
	if got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	if s.Line("", "none") != "" {
		t.Fatal("a call that sends nothing has a flow line")
	}
	ev := strings.Join(s.Evidence("toolu_4", "mcp__github__create_comment", "mcp:github"), "; ")
	for _, w := range []string{"toolu_3", "toolu_2", "toolu_4"} {
		if !strings.Contains(ev, w) {
			t.Errorf("evidence %q does not name %s", ev, w)
		}
	}
}

func TestAFlowLineKeepsEachFieldOneWord(t *testing.T) {
	var s State
	s.Take("upload:/s/uploads/a b.txt", "open path=x secret by=cat", "toolu_1", "Bash", time.Time{})
	if f := strings.Fields(s.Line("host", "un known")); len(f) != 5 {
		t.Fatalf("fields %q", f)
	}
}

func TestTheStateSurvivesAsANoteAndABadNoteIsEmpty(t *testing.T) {
	var s State
	s.Take("web:x", "secret", "toolu_1", "WebFetch", time.Unix(100, 0).UTC())
	back := Restore(s.Marshal())
	if back.Line("h", "") != s.Line("h", "") {
		t.Fatalf("restored %q, want %q", back.Line("h", ""), s.Line("h", ""))
	}
	for _, bad := range []string{"", "{", `{"untrusted":5}`, strings.Repeat("x", maxNote+1)} {
		if r := Restore([]byte(bad)); r.Untrusted != nil || r.Private != nil {
			t.Errorf("note %.20q restored %+v", bad, r)
		}
	}
	if (&State{}).Marshal() != nil {
		t.Error("an empty state has a note")
	}
}

func FuzzRestore(f *testing.F) {
	f.Add([]byte(`{"untrusted":{"call":"toolu_1","tool":"WebFetch","what":"web:x","at":"2026-01-01T00:00:00Z"}}`))
	f.Add([]byte(`{"private":{"call":"` + strings.Repeat("a", 400) + `"}}`))
	f.Fuzz(func(t *testing.T, note []byte) {
		s := Restore(note)
		line := s.Line("dest", "none")
		if len(line) > 3*(maxWhat+1)+64 {
			t.Fatalf("a line of %d bytes from a note", len(line))
		}
		if strings.Count(line, " ") > 4 {
			t.Fatalf("a line with more fields than it has: %q", line)
		}
		if s.Private != nil {
			s.Learn(s.Private.Call, string(note))
		}
		_ = s.Carries(string(note))
	})
}
