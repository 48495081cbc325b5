package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// toolUse is one scripted tool call.
type toolUse struct {
	Name  string
	Input any
}

// fakeAPI is a scripted Anthropic Messages API on 127.0.0.1. Each main-loop request (one that
// offers the Bash tool) gets the next turn of the script: a set of tool_use blocks, or, when the
// script is done, a short text that ends the turn. Other requests (titles, summaries) get text.
type fakeAPI struct {
	srv *httptest.Server

	mu      sync.Mutex
	turns   [][]toolUse
	results []toolResult // every tool_result the CLI sent back
	ids     int
}

type toolResult struct {
	ToolUseID string
	IsError   bool
	Content   string
}

func newFakeAPI(t testing.TB, turns ...[]toolUse) *fakeAPI {
	t.Helper()
	f := &fakeAPI{turns: turns}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// push adds turns for a later prompt in the same CLI session.
func (f *fakeAPI) push(turns ...[]toolUse) {
	f.mu.Lock()
	f.turns = append(f.turns, turns...)
	f.mu.Unlock()
}

func (f *fakeAPI) toolResults() []toolResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]toolResult(nil), f.results...)
}

type request struct {
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/messages") || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		fmt.Fprint(w, `{"input_tokens":10}`)
		return
	}
	main := false
	for _, t := range req.Tools {
		if t.Name == "Bash" {
			main = true
		}
	}
	var blocks []map[string]any
	stop := "end_turn"
	f.mu.Lock()
	if main {
		f.recordResults(req)
		if len(f.turns) > 0 {
			turn := f.turns[0]
			f.turns = f.turns[1:]
			for _, tu := range turn {
				f.ids++
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%03d", f.ids), "name": tu.Name, "input": tu.Input})
			}
			stop = "tool_use"
		}
	}
	f.mu.Unlock()
	if len(blocks) == 0 {
		blocks = []map[string]any{{"type": "text", "text": "Done."}}
	}
	if req.Stream {
		writeSSE(w, blocks, stop)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake",
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 10},
	})
}

func (f *fakeAPI) recordResults(req request) {
	if len(req.Messages) == 0 {
		return
	}
	last := req.Messages[len(req.Messages)-1]
	var content []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		IsError   bool            `json:"is_error"`
		Content   json.RawMessage `json:"content"`
	}
	if json.Unmarshal(last.Content, &content) != nil {
		return
	}
	for _, c := range content {
		if c.Type == "tool_result" && !f.seen(c.ToolUseID) {
			f.results = append(f.results, toolResult{ToolUseID: c.ToolUseID, IsError: c.IsError, Content: string(c.Content)})
		}
	}
}

// seen reports whether a result for this call was already recorded: the CLI resends the whole
// conversation with every request.
func (f *fakeAPI) seen(id string) bool {
	for _, r := range f.results {
		if r.ToolUseID == id {
			return true
		}
	}
	return false
}

func writeSSE(w http.ResponseWriter, blocks []map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 1},
	}})
	for i, b := range blocks {
		switch b["type"] {
		case "tool_use":
			input, _ := json.Marshal(b["input"])
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		default:
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	send("message_stop", map[string]any{"type": "message_stop"})
}
