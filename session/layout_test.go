package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocatePlacesAPathInTheLayout(t *testing.T) {
	roots := []string{"/r/one", "/r/two/"}
	tests := []struct {
		path string
		ok   bool
		want Place
	}{
		{"/r/one", false, Place{}},
		{"/r/onex/a", false, Place{}},
		{"/r/..one/a", false, Place{}},
		{"/elsewhere/a/b/local_1", false, Place{}},
		{"/r/one/acct", true, Place{Root: "/r/one", Level: LevelAccount}},
		{"/r/one/acct/org", true, Place{Root: "/r/one", Level: LevelOrg}},
		{"/r/one/acct/org/local_1", true, Place{Root: "/r/one", Level: LevelSession, Dir: "/r/one/acct/org/local_1"}},
		{"/r/one/acct/org/local_1.json", true, Place{Root: "/r/one", Level: LevelSession, Dir: "/r/one/acct/org/local_1", Metadata: true}},
		{"/r/one/acct/org/stray", true, Place{Root: "/r/one", Level: LevelSession, Dir: "/r/one/acct/org/stray"}},
		{"/r/one/acct/org/local_1/.claude", true, Place{Root: "/r/one", Level: LevelInside, Dir: "/r/one/acct/org/local_1", Rel: ".claude"}},
		{"/r/one/acct/org/local_1/.claude/x.json", true, Place{Root: "/r/one", Level: LevelInside, Dir: "/r/one/acct/org/local_1", Rel: ".claude/x.json"}},
		{"/r/two/a/b/local_2/./outputs/../.claude/", true, Place{Root: "/r/two/", Level: LevelInside, Dir: "/r/two/a/b/local_2", Rel: ".claude"}},
	}
	for _, tt := range tests {
		got, ok := Locate(roots, tt.path)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Locate(%q) = %+v, %v; want %+v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	if p, _ := Locate(roots, "/r/one/a/b/local_1"); !p.IsSession() || p.ID() != "local_1" {
		t.Errorf("a session folder: IsSession %v, ID %q", p.IsSession(), p.ID())
	}
	for _, path := range []string{"/r/one/a/b/local_1.json", "/r/one/a/b/stray", "/r/one/a/b/local_1/x", "/r/one/a"} {
		if p, _ := Locate(roots, path); p.IsSession() {
			t.Errorf("%s is not a session folder", path)
		}
	}
}

func FuzzLocate(f *testing.F) {
	for _, s := range []string{"a/b/local_1", "a/b/local_1.json", "a/b/local_1/.claude/settings.json", "..", "a/../..", "a//b/./c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		root := "/root/sessions"
		p, ok := Locate([]string{root}, root+"/"+rel)
		if !ok {
			return
		}
		if p.Level < LevelAccount || p.Level > LevelInside {
			t.Fatalf("level %d", p.Level)
		}
		if (p.Dir == "") != (p.Level < LevelSession) {
			t.Fatalf("dir %q at level %d", p.Dir, p.Level)
		}
		if p.Dir != "" {
			if r, err := filepath.Rel(root, p.Dir); err != nil || strings.Count(r, "/") != 2 || r == ".." || strings.HasPrefix(r, "../") {
				t.Fatalf("session folder %q is not three levels under the root", p.Dir)
			}
			if !p.Metadata && filepath.Join(p.Dir, p.Rel) != filepath.Clean(root+"/"+rel) {
				t.Fatalf("dir %q and rel %q do not make the path %q", p.Dir, p.Rel, rel)
			}
		}
	})
}

func TestOpenUnderRefusesALinkAnywhereOnTheWay(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "acct", "org", "local_1")
	if err := os.MkdirAll(filepath.Join(real, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, ".claude", "settings.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenUnder(root, real)
	if err != nil {
		t.Fatalf("the real session: %v", err)
	}
	if data, err := s.ReadFile(SettingsFile, 100); err != nil || string(data) != "{}" {
		t.Errorf("read through the handle: %q, %v", data, err)
	}
	s.Close()

	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(elsewhere, "org", "local_1", ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{ // a link at each level, each pointing at a look-alike tree
		filepath.Join(root, "linked"):                         elsewhere,
		filepath.Join(root, "acct", "linkedorg"):              filepath.Join(elsewhere, "org"),
		filepath.Join(root, "acct", "org", "local_2"):         filepath.Join(elsewhere, "org", "local_1"),
		filepath.Join(root, "acct", "org", "local_inner"):     real,
		filepath.Join(root, "acct", "org", "local_1.json.ln"): real,
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{
		filepath.Join(root, "linked", "org", "local_1"),
		filepath.Join(root, "acct", "linkedorg", "local_1"),
		filepath.Join(root, "acct", "org", "local_2"),
		filepath.Join(root, "acct", "org", "local_inner"),
	} {
		if s, err := OpenUnder(root, dir); !errors.Is(err, ErrLink) {
			if s != nil {
				s.Close()
			}
			t.Errorf("%s: %v, want ErrLink", dir, err)
		}
	}
	for _, dir := range []string{root, filepath.Join(root, "acct", "org"), filepath.Join(real, ".claude"), real + ".json", "/elsewhere/a/b/local_1"} {
		if s, err := OpenUnder(root, dir); err == nil {
			s.Close()
			t.Errorf("%s is no session folder, yet it opened", dir)
		}
	}
}
