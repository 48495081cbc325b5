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
