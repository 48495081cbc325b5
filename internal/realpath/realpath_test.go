package realpath

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

func TestAPathThroughAFolderLinkIsWhereTheLinkLeadsEvenToAFileNotYetWritten(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "channel")
	os.MkdirAll(target, 0o700)
	os.MkdirAll(filepath.Join(dir, "outputs"), 0o700)
	if err := os.Symlink(target, filepath.Join(dir, "outputs", "notes")); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(target)
	in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(dir, "outputs", "notes", "new.json"), "content": "x"})
	p, ok := Call(claudehook.Payload{ToolName: "Write", ToolInput: in}, filepath.EvalSymlinks)
	var got map[string]string
	json.Unmarshal(p.ToolInput, &got)
	if !ok || got["file_path"] != filepath.Join(real, "new.json") || got["content"] != "x" {
		t.Errorf("Call = %v %s, want the file in %s", ok, p.ToolInput, real)
	}
}

func TestACallWithoutLinksOrAbsolutePathsIsLeftAsItIs(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	for _, input := range []map[string]string{
		{"file_path": filepath.Join(dir, "a", "b.txt")},
		{"file_path": "relative/b.txt"},
		{"command": "ln -s / x"},
	} {
		in, _ := json.Marshal(input)
		if _, ok := Call(claudehook.Payload{ToolInput: in}, filepath.EvalSymlinks); ok {
			t.Errorf("Call(%v) changed the call", input)
		}
	}
}

// Whatever a tool input holds, Call neither fails nor turns an absolute path into a relative one.
func FuzzCall(f *testing.F) {
	f.Add(`{"file_path":"/tmp/x/../y","content":"z"}`)
	f.Add(`{"path":"/","notebook_path":"rel"}`)
	f.Add(`[1,2]`)
	f.Fuzz(func(t *testing.T, input string) {
		eval := func(p string) (string, error) { return "/real" + p, nil }
		p, ok := Call(claudehook.Payload{ToolInput: json.RawMessage(input)}, eval)
		if !ok {
			return
		}
		var before, after map[string]any
		json.Unmarshal([]byte(input), &before)
		if err := json.Unmarshal(p.ToolInput, &after); err != nil {
			t.Fatalf("the rewritten input is not JSON: %v", err)
		}
		for _, k := range pathKeys {
			was, _ := before[k].(string)
			now, _ := after[k].(string)
			if filepath.IsAbs(was) && !filepath.IsAbs(now) {
				t.Fatalf("%s: %q became %q", k, was, now)
			}
			if !filepath.IsAbs(was) && now != was {
				t.Fatalf("%s: a path that was not absolute changed: %q became %q", k, was, now)
			}
		}
	})
}

// A shell on the Mac follows links: a path a command names through a link to a protected folder
// is that folder's, written from the home as the map writes it; a path no link moves is not.
func TestWhereTakesAShellPathWhereTheLinksLead(t *testing.T) {
	home := t.TempDir()
	ssh := filepath.Join(home, ".ssh")
	os.MkdirAll(ssh, 0o700)
	os.WriteFile(filepath.Join(ssh, "notes"), []byte("x"), 0o600)
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o700)
	if err := os.Symlink(ssh, filepath.Join(proj, "k")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(proj, "own.txt"), []byte("x"), 0o600)
	where := Where(home, filepath.EvalSymlinks, func() Identities { return Of([]string{ssh}, nil, nil) })
	if got, ok := where("~/proj/k/notes"); !ok || got != "~/.ssh/notes" {
		t.Errorf("through the link: %q %v, want ~/.ssh/notes", got, ok)
	}
	if got, ok := where(filepath.Join(proj, "k", "new")); !ok || got != "~/.ssh/new" {
		t.Errorf("a file to be written through the link: %q %v", got, ok)
	}
	if got, ok := where("~/proj/own.txt"); ok {
		t.Errorf("a path no link moves was moved to %q", got)
	}
	if _, ok := Where("", filepath.EvalSymlinks, nil)("~/proj/k/notes"); ok {
		t.Error("with no home known, ~ was expanded")
	}
}
