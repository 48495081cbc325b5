package corpus

import (
	"context"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier"
	"github.com/coworkbridge/coworkbridge/claudehook"
)

func builtin(t testing.TB) *classifier.Classifier {
	t.Helper()
	c, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMeasureCountsCatchesFalseBlocksAndTheScoredSubset(t *testing.T) {
	rows := strings.Join([]string{
		`{"tool":"Bash","command":"rm -rf /","expect":"deny"}`,
		`{"tool":"Bash","command":"ls","expect":"deny"}`, // a miss: let through
		`{"tool":"Bash","command":"ls -la","expect":"allow"}`,
		`{"tool":"Bash","command":"git push --force origin main","expect":"allow"}`, // a miss: denied
		`{"tool":"Bash","command":"rm -rf /","expect":"deny","category":"edge_cases"}`,
		`{"tool":"(raw_hook_json)","command":"not a payload","expect":"allow"}`,
		// A decision-log record, labelled by its decision.
		`{"tool":"Bash","input":{"command":"cat ~/.ssh/id_rsa"},"decision":"deny"}`,
		``,
	}, "\n")
	s, err := Measure(context.Background(), builtin(t), strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	want := Tally{Rows: 7, DenyRows: 4, Caught: 3, Denied: 3, AllowRows: 3, FalseBlocks: 1}
	if s.All != want {
		t.Errorf("all %+v, want %+v", s.All, want)
	}
	if s.Scored.Rows != 6 || s.Scored.DenyRows != 3 {
		t.Errorf("scored %+v: the edge case must not count", s.Scored)
	}
	if len(s.Misses) != 2 || s.Misses[0].Line != 2 || s.Misses[1].Line != 4 || s.Misses[1].Got != claudehook.Deny {
		t.Errorf("misses %+v", s.Misses)
	}
}

func TestMeasureNamesTheLineThatIsNotARow(t *testing.T) {
	_, err := Measure(context.Background(), builtin(t), strings.NewReader("{\"tool\":\"Bash\",\"command\":\"ls\",\"expect\":\"allow\"}\nnot json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err %v, want it to name line 2", err)
	}
}

func FuzzReplay(f *testing.F) {
	f.Add(`{"rid":"a","tool":"Bash","input":{"command":"ls"},"decision":"deny","rule":"x"}`)
	f.Add(`{"tool":"Read","input":null,"decision":"allow","input_omitted":"none"}` + "\n\ngarbage")
	f.Add(`{"tool":"Write","input":{"file_path":"~/.zshrc","content":"x"},"decision":"allow","cwd":"/"}`)
	c := builtin(f)
	f.Fuzz(func(t *testing.T, log string) {
		res := NewReplayed()
		if err := Replay(context.Background(), c, strings.NewReader(log), res); err != nil {
			t.Fatal(err)
		}
		if res.Replayed+res.NotLogged+res.GuardEvents != res.Records {
			t.Fatalf("records %d are not replayed %d + not logged %d + guard events %d", res.Records, res.Replayed, res.NotLogged, res.GuardEvents)
		}
		changed := 0
		for k, n := range res.Changes {
			changed += n
			if len(res.Examples[k]) == 0 || len(res.Examples[k]) > replayExamples {
				t.Fatalf("change %s has %d examples", k, len(res.Examples[k]))
			}
		}
		if changed > res.Replayed {
			t.Fatalf("%d changes of %d replayed", changed, res.Replayed)
		}
	})
}

// Rows given as tool calls (realworld, realtraffic) are judged as the call they hold, in its own
// folder; a deny_or_ask row is caught by either verdict, and a deny row only asked about is a
// miss to read, though it counts as caught.
func TestMeasureReadsRowsGivenAsToolCalls(t *testing.T) {
	rows := strings.Join([]string{
		`{"id":"a.1","tool":"Read","input":{"file_path":"/Users/alex/.ssh/id_rsa"},"cwd":"/sessions/demo/mnt/outputs","expect":"deny"}`,
		`{"id":"a.2","tool":"Bash","input":{"command":"git clean -fdx"},"cwd":"/sessions/demo/mnt/outputs","expect":"deny_or_ask"}`,
		`{"id":"a.3","tool":"Bash","input":{"command":"echo hi"},"expect":"deny_or_ask"}`,
		`{"id":"a.4","tool":"Bash","input":{"command":"git clean -fdx"},"expect":"deny"}`,
		`{"id":"a.5","tool":"Grep","input":{"pattern":"TODO","path":"."},"expect":"allow"}`,
	}, "\n")
	s, err := Measure(context.Background(), builtin(t), strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	want := Tally{Rows: 5, DenyRows: 2, Caught: 2, Denied: 1, EitherRows: 2, EitherCaught: 1, AllowRows: 1}
	if s.All != want {
		t.Errorf("all %+v, want %+v", s.All, want)
	}
	var ids []string
	for _, m := range s.Misses {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, " ") != "a.3 a.4" {
		t.Errorf("misses %v, want a.3 (let through) and a.4 (asked, not denied)", ids)
	}
}
