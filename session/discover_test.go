package session

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// build creates the entries of spec under base: a name ending in "/" is a folder, "a -> b" a link,
// anything else an empty file.
func build(t *testing.T, base string, spec ...string) {
	t.Helper()
	for _, s := range spec {
		if from, to, ok := strings.Cut(s, " -> "); ok {
			p := filepath.Join(base, from)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(to, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p := filepath.Join(base, s)
		if strings.HasSuffix(s, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func rel(base string, paths []string) []string {
	out := []string{}
	for _, p := range paths {
		r, _ := filepath.Rel(base, p)
		out = append(out, filepath.ToSlash(r))
	}
	return out
}

func TestDiscoverFollowsTheCoworkLayout(t *testing.T) {
	base := t.TempDir()
	build(t, base,
		"root/acct/org/local_a/.claude/",
		"root/acct/org/local_a.json",
		"root/acct/org/local_b/.claude/",
		"root/acct/org2/local_c/.claude/",
		"root/acct/org/local_new/",         // no .claude yet
		"root/acct/org/local_file/.claude", // .claude is a file
		"root/acct/org/other/",             // not a session
		"root/acct/local_shallow/.claude/", // wrong depth
		"root/acct/org/local_link -> "+filepath.Join(base, "root/acct/org/local_a"),
		"root/acct2 -> /etc",
		"root/.DS_Store",
		"root/acct/.hidden/",
		"root/acct/org/notes.txt",
	)
	sc := Discover([]string{filepath.Join(base, "root"), filepath.Join(base, "absent")}, 100)
	var ids []string
	for _, f := range sc.Sessions {
		ids = append(ids, f.ID)
		if f.Root != filepath.Join(base, "root") || f.ModTime.IsZero() || filepath.Base(f.Dir) != f.ID {
			t.Errorf("bad Found %+v", f)
		}
	}
	if want := []string{"local_a", "local_b", "local_c"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("sessions %v, want %v", ids, want)
	}
	if got, want := rel(base, sc.Pending), []string{"root/acct/org/local_new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
	wantUnrec := []string{
		"root/acct/local_shallow",
		"root/acct/org/local_file/.claude",
		"root/acct/org/local_link",
		"root/acct/org/other",
		"root/acct2",
	}
	if got := rel(base, sc.Unrecognised); !reflect.DeepEqual(got, wantUnrec) {
		t.Errorf("unrecognised %v, want %v", got, wantUnrec)
	}
	wantFolders := []string{"root/acct", "root/acct/org", "root/acct/org2"}
	if got := rel(base, sc.Folders); !reflect.DeepEqual(got, wantFolders) {
		t.Errorf("folders %v, want %v", got, wantFolders)
	}
	if got := rel(base, sc.MissingRoots); !reflect.DeepEqual(got, []string{"absent"}) {
		t.Errorf("missing roots %v", got)
	}
	if sc.Truncated || len(sc.Errors) != 0 {
		t.Errorf("truncated %v errors %v", sc.Truncated, sc.Errors)
	}
}

func TestDiscoverStopsAtTheLimit(t *testing.T) {
	base := t.TempDir()
	for _, id := range []string{"a", "b", "c", "d"} {
		build(t, base, "root/x/y/local_"+id+"/.claude/")
	}
	sc := Discover([]string{filepath.Join(base, "root")}, 3)
	if len(sc.Sessions) != 3 || !sc.Truncated {
		t.Errorf("got %d sessions, truncated %v; want 3 and truncated", len(sc.Sessions), sc.Truncated)
	}
}

func TestDiscoverNeverFollowsALinkedRoot(t *testing.T) {
	base := t.TempDir()
	build(t, base, "real/x/y/local_a/.claude/", "linked -> "+filepath.Join(base, "real"))
	sc := Discover([]string{filepath.Join(base, "linked")}, 10)
	if len(sc.Sessions) != 0 || len(sc.Unrecognised) != 1 {
		t.Errorf("got %+v, want the linked root reported and not walked", sc)
	}
}

func TestDiscoverReportsAnUnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads folders regardless of permissions")
	}
	base := t.TempDir()
	build(t, base, "root/x/y/local_a/.claude/")
	if err := os.Chmod(filepath.Join(base, "root/x"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "root/x"), 0o755) })
	if sc := Discover([]string{filepath.Join(base, "root")}, 10); len(sc.Errors) != 1 {
		t.Errorf("errors %v, want one", sc.Errors)
	}
}

// A session the caller answers for is taken as the caller knows it, with no look into it; the
// others are looked at as by Discover. A link is never answered for: the listing refuses it first.
func TestDiscoverKnownTakesTheCallersWordForTheSessionsItFollows(t *testing.T) {
	base := t.TempDir()
	build(t, base,
		"root/acct/org/local_a/.claude/",
		"root/acct/org/local_b/", // .claude gone since the caller looked: its watch tells the caller
		"root/acct/org/local_c/",
		"root/acct/org/local_link -> "+filepath.Join(base, "root/acct/org/local_a"),
	)
	when := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var asked []string
	sc := DiscoverKnown([]string{filepath.Join(base, "root")}, 10, func(dir string) (time.Time, bool) {
		asked = append(asked, filepath.Base(dir))
		return when, filepath.Base(dir) != "local_c"
	})
	got := map[string]time.Time{}
	for _, f := range sc.Sessions {
		got[f.ID] = f.ModTime
	}
	if len(got) != 2 || !got["local_a"].Equal(when) || !got["local_b"].Equal(when) {
		t.Errorf("sessions %v: want local_a and local_b as the caller knows them", got)
	}
	if got := rel(base, sc.Pending); !reflect.DeepEqual(got, []string{"root/acct/org/local_c"}) {
		t.Errorf("pending %v: a session the caller does not know is looked at", got)
	}
	if slices.Contains(asked, "local_link") {
		t.Error("the caller was asked about a link")
	}
}
