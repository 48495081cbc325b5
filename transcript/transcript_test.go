package transcript

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
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

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":false}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, it := range Parse(data) {
			if it.ToolUseID == "" || len(it.ToolUseID) > maxID || (it.Kind != Use && it.Kind != Result) {
				t.Fatalf("item %+v", it)
			}
		}
	})
}
