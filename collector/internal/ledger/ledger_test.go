package ledger

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coworkbridge/coworkbridge/transcript"
)

func transcriptUse(id string, input json.RawMessage) transcript.Item {
	return transcript.Item{Kind: transcript.Use, ToolUseID: id, Tool: "Write", Input: input}
}

// A transcript of calls with huge inputs and no results (the transcript bomb) leaves the
// reconciler holding a bounded preview of each, not the inputs.
func TestHugeTranscriptInputsAreNotKept(t *testing.T) {
	r := New(1 << 20)
	big := `"` + strings.Repeat("x", 4<<20) + `"`
	for i := range 30 {
		r.Take(transcriptUse(fmt.Sprintf("toolu_%d", i), json.RawMessage(`{"content":`+big+`}`)), time.Now())
	}
	kept := 0
	for _, u := range r.uses {
		kept += len(u.Preview) + 16*len(u.Input)
	}
	if kept > 30*2048 {
		t.Errorf("the ledger keeps %d bytes for 30 calls of 4 MiB", kept)
	}
}

// Whatever a session throws at reconciliation (events no call answers, calls with no result,
// results with no event, inputs with many long member names), what is kept stays within the
// session's budget, counted by size, and the excess is counted as refused.
func TestWhatASessionMakesReconciliationKeepStaysWithinItsBudget(t *testing.T) {
	const budget = 256 << 10
	r := New(budget)
	r.SetFollowed()
	now := time.Now()
	wide := map[string]string{}
	for k := range 60 {
		wide[strings.Repeat("k", 100)+strconv.Itoa(k)] = "v"
	}
	input, _ := json.Marshal(wide)
	for i := range 5000 {
		id := fmt.Sprintf("toolu_%06d", i)
		r.Judged(Event{ToolUseID: "e" + id, Tool: strings.Repeat("T", 10000), RID: "r", Input: input}, now)
		r.Take(transcriptUse("u"+id, input), now)
		r.Take(transcript.Item{Kind: transcript.Result, ToolUseID: "p" + id}, now)
		if r.bytes > budget {
			t.Fatalf("after %d rounds the ledger keeps %d bytes, over its budget of %d", i, r.bytes, budget)
		}
	}
	if r.refused == 0 {
		t.Error("nothing refused: the budget was never reached")
	}
	var sum int64
	for id, j := range r.judged {
		sum += j.size(id)
	}
	for id, u := range r.uses {
		sum += u.size(id)
	}
	for id := range r.pending {
		sum += pendingSize(id)
	}
	if sum != r.bytes {
		t.Errorf("the ledger says %d bytes, the maps hold %d", r.bytes, sum)
	}
	for id := range r.judged {
		r.dropJudged(id)
	}
	for id := range r.uses {
		r.dropUse(id)
	}
	for id := range r.pending {
		r.dropPending(id)
	}
	if r.bytes != 0 {
		t.Errorf("%d bytes left on the ledger once everything is dropped", r.bytes)
	}
}

// A session with no transcript to hold its events against keeps its newest events within the
// budget, dropping the oldest, and is not reported: nothing can be reconciled there.
func TestWithoutTranscriptsTheOldestEventsMakeRoom(t *testing.T) {
	r := New(64 << 10)
	start := time.Now()
	for i := range 2000 {
		r.Judged(Event{ToolUseID: fmt.Sprintf("toolu_%06d", i), Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}, start.Add(time.Duration(i)*time.Millisecond))
	}
	if r.refused != 0 || r.bytes > 64<<10 {
		t.Fatalf("refused %d, %d bytes kept", r.refused, r.bytes)
	}
	if _, ok := r.judged["toolu_001999"]; !ok {
		t.Error("the newest event was not kept")
	}
	if _, ok := r.judged["toolu_000000"]; ok {
		t.Error("the oldest event was kept past the budget")
	}
}

// What the ledger persists (the daemon's state file) never holds more of an input than the
// decision log does: a key in a nested array of an MCP call's arguments, in a call awaiting its
// result or in an event awaiting its call, is redacted there too.
func TestThePersistedLedgerHoldsNoSecretTheLogWouldRedact(t *testing.T) {
	const token = "ghp_1234567890abcdefghijABCDEFGHIJ123456"
	input := json.RawMessage(`{"repos":[{"name":"x","auth":["Bearer ` + token + `"]}],"note":"key ` + token + `"}`)
	l := New(1 << 20)
	l.Take(transcript.Item{Kind: transcript.Use, ToolUseID: "toolu_a", Tool: "mcp__github__push", Input: input}, time.Now())
	l.Judged(Event{ToolUseID: "toolu_b", Tool: "mcp__github__push", RID: "r", Input: input}, time.Now())
	if state := string(l.Persisted()); strings.Contains(state, token) || !strings.Contains(state, "REDACTED") {
		t.Errorf("persisted state holds the token:\n%s", state)
	}
}
