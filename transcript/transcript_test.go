package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// A transcript written by the pinned CLI (2.1.329): an allowed call, one denied by the hook, one
// that ran and failed. The api-request-blob lines repeat every block and must not count twice.
func TestTheCLIsTranscriptGivesEachCallAndResultOnce(t *testing.T) {
	f, err := os.Open("testdata/cli-2.1.329.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	var items []Item
	for sc.Scan() {
		items = append(items, Parse(sc.Bytes())...)
	}
	want := []Item{
		{Kind: Use, ToolUseID: "toolu_001", Tool: "Bash"},
		{Kind: Result, ToolUseID: "toolu_001"},
		{Kind: Use, ToolUseID: "toolu_002", Tool: "Bash"},
		{Kind: Result, ToolUseID: "toolu_002", IsError: true},
		{Kind: Use, ToolUseID: "toolu_003", Tool: "Bash"},
		{Kind: Result, ToolUseID: "toolu_003", IsError: true},
	}
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d: %+v", len(items), len(want), items)
	}
	for i, w := range want {
		got := items[i]
		if got.Kind != w.Kind || got.ToolUseID != w.ToolUseID || got.Tool != w.Tool || got.IsError != w.IsError {
			t.Errorf("item %d: %+v, want %+v", i, got, w)
		}
	}
	var in struct{ Command string }
	if json.Unmarshal(items[2].Input, &in) != nil || in.Command != "git push --force" {
		t.Errorf("input of the second call: %s", items[2].Input)
	}
}

func TestLinesOfOtherShapesGiveNothing(t *testing.T) {
	for _, l := range []string{
		``, `null`, `[]`, `{"type":"user","message":{"content":"just text"}}`,
		`{"type":"api-request-blob","message":{"content":[{"type":"tool_use","id":"toolu_9","name":"Bash"}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_use","id":"toolu_9","name":"Bash"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":""}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":7}]}}`,
	} {
		if items := Parse([]byte(l)); len(items) != 0 {
			t.Errorf("Parse(%s) = %+v", l, items)
		}
	}
}

func TestEveryConversationLineOfTheCLINamesItsVersion(t *testing.T) {
	data, err := os.ReadFile("testdata/cli-2.1.329.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int{}
	for l := range bytes.Lines(data) {
		if _, v := ParseLine(l); v != "" {
			versions[v]++
		}
	}
	if len(versions) != 1 || versions["2.1.329"] == 0 {
		t.Errorf("versions read: %v, want 2.1.329 alone", versions)
	}
	for _, l := range []string{
		`{"type":"user","version":"$(rm -rf ~)","message":{"content":"x"}}`,
		`{"type":"user","version":"2.1","message":{"content":"x"}}`,
		`{"type":"summary","version":"2.1.329"}`,
	} {
		if _, v := ParseLine([]byte(l)); v != "" {
			t.Errorf("ParseLine(%s) gave version %q", l, v)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":false}]}}`))
	f.Add([]byte(`{"type":"user","version":"2.1.329","message":{"content":"hi"}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, version := ParseLine(data)
		if _, ok := claudehook.ParseVersion(version); version != "" && !ok {
			t.Fatalf("version %q does not read as one", version)
		}
		for _, it := range items {
			if it.ToolUseID == "" || len(it.ToolUseID) > maxID || (it.Kind != Use && it.Kind != Result) {
				t.Fatalf("item %+v", it)
			}
			if text := it.Text(); len(text) > MaxResultText+1 {
				t.Fatalf("a result's text of %d bytes, over %d", len(text), MaxResultText)
			}
		}
		// The same line at a transcript's end, as a judgement looks for a result there.
		p := filepath.Join(t.TempDir(), "s.jsonl")
		if err := os.WriteFile(p, append([]byte("partial line\n"), data...), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if _, _, err := ResultIn(p, it.ToolUseID, int64(len(data))+1); err != nil {
				t.Fatalf("ResultIn: %v", err)
			}
		}
	})
}

func TestAnErrorResultFromBeforeTheHooksIsToldApart(t *testing.T) {
	cases := map[string]struct {
		content string
		want    bool
	}{
		"input failed the schema":   {`"<tool_use_error>InputValidationError: command is required</tool_use_error>"`, true},
		"a tool switched off":       {`[{"type":"text","text":"<tool_use_error>Error: No such tool available: Read. Read is disabled</tool_use_error>"}]`, true},
		"execution discarded":       {`"<tool_use_error>Error: Streaming fallback - tool execution discarded</tool_use_error>"`, true},
		"a command that failed":     {`"Exit code 1\nno such file"`, false},
		"a tool that failed to run": {`"<tool_use_error>Error calling tool (Write): EACCES</tool_use_error>"`, false},
		"a hook's refusal":          {`"coworkbridge: rule bash.git-push-force"`, false},
		"the words later on":        {`"output: <tool_use_error>InputValidationError"`, false},
	}
	for name, c := range cases {
		line := `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":` + c.content + `}]}}`
		items := Parse([]byte(line))
		if len(items) != 1 || items[0].NeverRan != c.want {
			t.Errorf("%s: items %+v, want NeverRan %v", name, items, c.want)
		}
	}
}

func TestResultInFindsACallsResultAtTheTranscriptsEnd(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	lines := strings.Repeat(`{"type":"user","message":{"content":"padding padding padding"}}`+"\n", 200) +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_read","content":[{"type":"text","text":"KEY=sk-test-0123456789"}]}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_fail","content":"Error: no such file","is_error":true}]}}` + "\n"
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if text, found, err := ResultIn(p, "toolu_read", 1024); err != nil || !found || text != "KEY=sk-test-0123456789" {
		t.Fatalf("the read's result: %q %v %v", text, found, err)
	}
	if text, found, err := ResultIn(p, "toolu_fail", 1024); err != nil || !found || text != "" {
		t.Fatalf("an error result: %q %v %v", text, found, err)
	}
	if _, found, _ := ResultIn(p, "toolu_none", 1024); found {
		t.Fatal("a result for a call the transcript does not show")
	}
	link := filepath.Join(dir, "link.jsonl")
	os.Symlink(p, link)
	if _, _, err := ResultIn(link, "toolu_read", 1024); err == nil {
		t.Fatal("read through a link")
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ResultIn(fifo, "toolu_read", 1024); err == nil {
		t.Fatal("read from a FIFO")
	}
}
