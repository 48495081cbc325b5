package realpath

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

func readCall(path string) claudehook.Payload {
	in, _ := json.Marshal(map[string]string{"file_path": path})
	return claudehook.Payload{ToolName: "Read", ToolInput: in}
}

func filePath(t *testing.T, p claudehook.Payload) string {
	t.Helper()
	var in map[string]string
	if err := json.Unmarshal(p.ToolInput, &in); err != nil {
		t.Fatal(err)
	}
	return in["file_path"]
}

// A hard link to one of coworkbridge's files has that file's identity: the call that reads it
// reads the file the map protects, and is written so.
func TestAHardLinkToAGuardedFileIsThatFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o700)
	os.WriteFile(filepath.Join(state, "health.json"), []byte("{}"), 0o600)
	outputs := filepath.Join(dir, "outputs")
	os.MkdirAll(outputs, 0o700)
	if err := os.Link(filepath.Join(state, "health.json"), filepath.Join(outputs, "h")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	ids := Of([]string{state}, []string{state}, nil)
	placed := func() Identities { return ids }
	p, ok := Resolve(readCall(filepath.Join(outputs, "h")), filepath.EvalSymlinks, placed)
	if got := filePath(t, p); !ok || got != filepath.Join(state, "health.json") {
		t.Errorf("Call = %v %q, want the guarded file", ok, got)
	}
	if _, ok := Resolve(readCall(filepath.Join(outputs, "other.md")), filepath.EvalSymlinks, placed); ok {
		t.Error("a file of the session's own was rewritten")
	}
}

// A hard link made in a working folder to a file anywhere below a protected folder (not only
// coworkbridge's own files) is that file; a file with several names that no protected place
// holds (a package manager's store) stays what it is.
func TestAHardLinkToAFileInsideAProtectedFolderIsThatFile(t *testing.T) {
	dir := t.TempDir()
	ssh := filepath.Join(dir, "home", ".ssh")
	os.MkdirAll(filepath.Join(ssh, "keys"), 0o700)
	secret := filepath.Join(ssh, "keys", "notes")
	os.WriteFile(secret, []byte("secret"), 0o600)
	outputs := filepath.Join(dir, "outputs")
	store := filepath.Join(dir, "store")
	os.MkdirAll(outputs, 0o700)
	os.MkdirAll(store, 0o700)
	if err := os.Link(secret, filepath.Join(outputs, "hard.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	os.WriteFile(filepath.Join(store, "index.js"), []byte("x"), 0o600)
	os.Link(filepath.Join(store, "index.js"), filepath.Join(outputs, "index.js"))
	ids := Of([]string{ssh}, nil, nil)
	if got, ok := ids.Place(filepath.Join(outputs, "hard.txt")); !ok || got != secret {
		t.Errorf("Place(hard.txt) = %q %v, want %s", got, ok, secret)
	}
	if got, ok := ids.Place(filepath.Join(outputs, "index.js")); ok {
		t.Errorf("a hard-linked file no protected place holds was placed at %s", got)
	}
	// Once the protected file is gone, its old identity names nothing.
	os.Remove(secret)
	if got, ok := ids.Place(filepath.Join(outputs, "hard.txt")); ok {
		t.Errorf("a file whose protected twin was removed was placed at %s", got)
	}
}

// fakeStat gives paths the identities a test says, as a second mount or a firmlink would.
type fakeStat map[string]uint64

func (f fakeStat) stat(p string) (fs.FileInfo, error) {
	ino, ok := f[p]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return fakeInfo{ino}, nil
}

type fakeInfo struct{ ino uint64 }

func (i fakeInfo) Name() string       { return "" }
func (i fakeInfo) Size() int64        { return 0 }
func (i fakeInfo) Mode() fs.FileMode  { return fs.ModeDir }
func (i fakeInfo) ModTime() time.Time { return time.Time{} }
func (i fakeInfo) IsDir() bool        { return true }
func (i fakeInfo) Sys() any           { return &syscall.Stat_t{Dev: 1, Ino: i.ino} }

// A folder reached under another name (a second mount, /System/Volumes/Data, another case, a
// /.vol path) is the folder: what lies below it, existing or not yet written, is written under
// the name the map knows.
func TestAFolderUnderAnotherNameIsTheProtectedFolder(t *testing.T) {
	st := fakeStat{"/": 2, "/Users": 3, "/Users/ada": 4, "/Users/ada/Logs": 5, "/mnt": 6, "/mnt/alias": 5, "/mnt/alias/old": 7,
		"/USERS": 3, "/USERS/ADA": 4, "/USERS/ADA/LOGS": 5, "/.vol": 8, "/.vol/1": 9, "/.vol/1/5": 5}
	ids := Identify([]string{"/Users/ada/Logs"}, st.stat)
	for in, want := range map[string]string{
		"/mnt/alias/decisions.jsonl":      "/Users/ada/Logs/decisions.jsonl",
		"/mnt/alias/old/x/y":              "/Users/ada/Logs/old/x/y",
		"/USERS/ADA/LOGS/decisions.jsonl": "/Users/ada/Logs/decisions.jsonl",
		"/.vol/1/5/decisions.jsonl":       "/Users/ada/Logs/decisions.jsonl",
		"/mnt/other/x":                    "/mnt/other/x",
		"/Users/ada/Logs/decisions.jsonl": "/Users/ada/Logs/decisions.jsonl",
	} {
		if got, _ := ids.Place(in); got != want {
			t.Errorf("Place(%q) = %q, want %q", in, got, want)
		}
	}
	if got, ok := ids.Place("relative/x"); ok || got != "relative/x" {
		t.Errorf("a relative path was rewritten: %q", got)
	}
}

// The real thing on Linux, where a second mount of a folder can be made (root only): a path
// through the mount reaches the protected folder.
func TestASecondMountOfAProtectedFolderIsTheFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount --bind needs root")
	}
	dir := t.TempDir()
	logs, alias := filepath.Join(dir, "logs"), filepath.Join(dir, "alias")
	os.MkdirAll(logs, 0o700)
	os.MkdirAll(alias, 0o700)
	if out, err := exec.Command("mount", "--bind", logs, alias).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here: %v %s", err, out)
	}
	defer exec.Command("umount", alias).Run()
	ids := Of([]string{logs}, nil, nil)
	if got, ok := ids.Place(filepath.Join(alias, "decisions.jsonl")); !ok || got != filepath.Join(logs, "decisions.jsonl") {
		t.Errorf("Place through the mount = %v %q", ok, got)
	}
}

// A second mount of one session's folder has that folder's identity: a write through it is a
// write into another session, however far below the sessions root that folder lies.
func TestASecondMountOfASessionFolderIsInsideTheSessionsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount --bind needs root")
	}
	root := filepath.Join(t.TempDir(), "sessions")
	b := filepath.Join(root, "acc", "org", "local_b")
	os.MkdirAll(filepath.Join(b, "outputs"), 0o755)
	alias := filepath.Join(t.TempDir(), "alias")
	os.MkdirAll(alias, 0o755)
	if out, err := exec.Command("mount", "--bind", b, alias).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here: %v %s", err, out)
	}
	defer exec.Command("umount", alias).Run()
	ids := Of([]string{root}, nil, []string{root})
	want := filepath.Join(b, "outputs", "CLAUDE.md")
	if got, ok := ids.Place(filepath.Join(alias, "outputs", "CLAUDE.md")); !ok || got != want {
		t.Errorf("Place through the mount = %v %q, want %q", ok, got, want)
	}
}

func FuzzPlace(f *testing.F) {
	f.Add("/mnt/alias/x")
	f.Add("/../..//x")
	f.Add("rel")
	st := fakeStat{"/": 2, "/mnt": 6, "/mnt/alias": 5, "/logs": 5}
	ids := Identify([]string{"/logs"}, st.stat)
	f.Fuzz(func(t *testing.T, p string) {
		got, ok := ids.Place(p)
		if !filepath.IsAbs(p) && (ok || got != p) {
			t.Fatalf("a relative path changed: %q -> %q", p, got)
		}
		if ok && !filepath.IsAbs(got) {
			t.Fatalf("%q became %q", p, got)
		}
	})
}

// BenchmarkOfAndPlace is what the host hook pays for a file tool's call: the identities of a
// Mac's places taken (state and log folders with their files, a sessions root with 50 sessions)
// and one path placed.
func BenchmarkOfAndPlace(b *testing.B) {
	dir := b.TempDir()
	state, logs, root := filepath.Join(dir, "state"), filepath.Join(dir, "logs"), filepath.Join(dir, "sessions")
	for _, d := range []string{state, logs} {
		os.MkdirAll(d, 0o700)
		for _, f := range []string{"a", "b", "c", "d", "e"} {
			os.WriteFile(filepath.Join(d, f), nil, 0o600)
		}
	}
	for i := range 50 {
		os.MkdirAll(filepath.Join(root, "acc", "org", "local_"+string(rune('a'+i%26))+string(rune('a'+i/26))), 0o700)
	}
	target := filepath.Join(root, "acc", "org", "local_aa", "outputs", "notes", "x.md")
	b.ResetTimer()
	for range b.N {
		ids := Of([]string{state, logs, root}, []string{state, logs}, []string{root})
		ids.Place(target)
	}
}

// A protected file replaced since its identity was taken (health.json is rewritten by rename)
// freed its inode; a new file given that inode is not the protected file.
func TestAFileGivenAReplacedPlacesInodeIsNotThatPlace(t *testing.T) {
	st := fakeStat{"/": 2, "/state": 3, "/state/health.json": 40, "/s": 5, "/s/outputs": 6}
	ids := Identify([]string{"/state/health.json"}, st.stat)
	st["/state/health.json"] = 41  // rewritten: a new inode
	st["/s/outputs/notes.md"] = 40 // the freed one, reused
	if got, ok := ids.Place("/s/outputs/notes.md"); ok {
		t.Errorf("Place = %q: a reused inode was taken for the place", got)
	}
}

// A protected file with a second name inside the sessions root (the calling session's own hard
// link to it) keeps its own name: it is never renamed to the session's file, which would let a
// read through a link to the protected file pass as a read of the session's own. The session's
// name, named, is the protected file; two names inside the sessions root are each other.
func TestAProtectedFileIsNeverRenamedToASessionsHardLinkToIt(t *testing.T) {
	dir := t.TempDir()
	ssh := filepath.Join(dir, "home", ".ssh")
	sessions := filepath.Join(dir, "sessions")
	outputs := filepath.Join(sessions, "acct", "org", "local_a", "outputs")
	other := filepath.Join(sessions, "acct", "org", "local_b", "outputs")
	for _, d := range []string{ssh, outputs, other} {
		os.MkdirAll(d, 0o700)
	}
	secret := filepath.Join(ssh, "notes")
	os.WriteFile(secret, []byte("secret"), 0o600)
	if err := os.Link(secret, filepath.Join(outputs, "hard.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	os.WriteFile(filepath.Join(other, "plan.md"), []byte("b"), 0o600)
	os.Link(filepath.Join(other, "plan.md"), filepath.Join(outputs, "plan.md"))
	ids := Of([]string{sessions}, nil, []string{sessions}).WithSecrets(func() []string { return []string{ssh} })
	if got, ok := ids.Place(secret); ok {
		t.Errorf("the protected file was renamed to %s", got)
	}
	if got, ok := ids.Place(filepath.Join(outputs, "hard.txt")); !ok || got != secret {
		t.Errorf("the session's hard link: %q %v, want %s", got, ok, secret)
	}
	if got, ok := ids.Place(filepath.Join(outputs, "plan.md")); !ok || got != filepath.Join(other, "plan.md") {
		t.Errorf("a hard link to another session's file: %q %v", got, ok)
	}
	if got, ok := HardLinked(filepath.Join(outputs, "hard.txt"), func() Identities { return ids }); !ok || got != secret {
		t.Errorf("HardLinked, as the VM's view is looked at: %q %v", got, ok)
	}
	os.Symlink(outputs, filepath.Join(dir, "via"))
	if got, ok := HardLinked(filepath.Join(dir, "via", "hard.txt"), func() Identities { return ids }); ok {
		t.Errorf("HardLinked followed a link the VM would not: %s", got)
	}
}

func TestInHomeWritesTildePathsInTheHomeAndLeavesThemOutWithoutOne(t *testing.T) {
	in := []string{"~/.ssh", "/etc/ssh", "~/.aws"}
	if got := InHome(in, "/home/ada"); !slices.Equal(got, []string{"/home/ada/.ssh", "/etc/ssh", "/home/ada/.aws"}) {
		t.Errorf("InHome = %q", got)
	}
	if got := InHome(in, ""); !slices.Equal(got, []string{"/etc/ssh"}) {
		t.Errorf("InHome without a home = %q", got)
	}
}
