// Package transcript reads what Claude Code's session transcripts
// (.claude/projects/<slug>/<id>.jsonl) say about tool calls: each call the model made (a tool_use
// with its id, tool and input) and each result the CLI recorded for one (a tool_result, an error
// or not).
//
// A transcript sits in the session folder and is the agent's to edit: the package trusts nothing
// in it, reads one line at a time, and ignores whatever does not have the expected shape. It does
// not find transcripts or keep positions in them (see collector and spool).
package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/coworkbridge/coworkbridge/claudehook"
)

// Kind says whether an Item is a call or a result.
type Kind int

const (
	// Use: the model asked for a tool call.
	Use Kind = iota + 1
	// Result: the CLI recorded what came of a call.
	Result
)

// Item is one tool call or one tool result.
type Item struct {
	Kind      Kind
	ToolUseID string
	// Tool and Input are set on a Use.
	Tool  string
	Input json.RawMessage
	// Cwd is the folder the line says the call was made in, against which Claude Code takes a
	// relative path ("" when it says none).
	Cwd string
	// IsError is set on a Result that the CLI marked as an error: a refusal (by a hook or its own
	// rules) or a tool that ran and failed; the two cannot be told apart reliably.
	IsError bool
	// NeverRan is set on an error Result whose text shows the call stopped before any hook could
	// see it: its input failed the tool's schema, the tool does not exist, or its execution was
	// discarded (CLI 2.1.332's own words). Nothing else says a call with no judgement did not run.
	NeverRan bool
	// Content is a Result's content as the line holds it (valid only while the line is: a
	// Follower's callback); Text reads it.
	Content json.RawMessage
}

// Text is what a Result showed the model, as text (its text parts joined), at most MaxResultText
// bytes: what a call read, for the session's flow (package flow). Decoded only when asked: most
// results are never read this way.
func (it Item) Text() string { return resultText(it.Content) }

// MaxResultText bounds the text kept of one result: a read's secrets sit in its first lines, and
// a result can hold a whole file.
const MaxResultText = 64 << 10

// beforeHooks are how the CLI's results begin when a call stopped before the PreToolUse hooks.
var beforeHooks = []string{
	"<tool_use_error>InputValidationError",
	"<tool_use_error>Error: No such tool available",
	"<tool_use_error>Error: Streaming fallback",
	"InputValidationError",
}

// resultText is a result's content as text: a string, or its text parts joined by newlines
// (images and other parts are left out), cut at MaxResultText.
func resultText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s[:min(len(s), MaxResultText)]
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" || b.Len() >= MaxResultText {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text[:min(len(p.Text), MaxResultText-b.Len())])
	}
	return b.String()
}

// neverRan reports whether an error result's content is one of beforeHooks.
func neverRan(content json.RawMessage) bool {
	text := resultText(content)
	for _, p := range beforeHooks {
		if strings.HasPrefix(strings.TrimSpace(text), p) {
			return true
		}
	}
	return false
}

// line is the part of a transcript line this package reads. Only "assistant" and "user" lines
// are the conversation; others (api-request-blob among them) repeat its blocks and are ignored.
type line struct {
	Type    string `json:"type"`
	Version string `json:"version"`
	Cwd     string `json:"cwd"`
	Message struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// maxID bounds a tool-use id: real ones are about 30 characters.
const maxID = 128

// Parse returns the tool calls and results of one transcript line, in order; none for a line of
// any other kind or shape.
func Parse(data []byte) []Item {
	items, _ := ParseLine(data)
	return items
}

// ParseLine is Parse that also returns the version of Claude Code the line says wrote it (every
// conversation line carries one); "" when it has none or none that reads as a version. The agent
// can write lines too, so a version here says a CLI of it may have run, not that one did.
func ParseLine(data []byte) (items []Item, version string) {
	var l line
	if json.Unmarshal(data, &l) != nil || (l.Type != "assistant" && l.Type != "user") {
		return nil, ""
	}
	if _, ok := claudehook.ParseVersion(l.Version); ok {
		version = l.Version
	}
	return parseBlocks(l), version
}

func parseBlocks(l line) []Item {
	var blocks []block
	if json.Unmarshal(l.Message.Content, &blocks) != nil { // a plain string: text only
		return nil
	}
	var items []Item
	for _, b := range blocks {
		switch {
		case l.Type == "assistant" && b.Type == "tool_use" && validID(b.ID):
			items = append(items, Item{Kind: Use, ToolUseID: b.ID, Tool: b.Name, Input: b.Input, Cwd: l.Cwd})
		case l.Type == "user" && b.Type == "tool_result" && validID(b.ToolUseID):
			items = append(items, Item{Kind: Result, ToolUseID: b.ToolUseID, IsError: b.IsError, NeverRan: b.IsError && neverRan(b.Content),
				Content: b.Content})
		}
	}
	return items
}

func validID(id string) bool { return id != "" && len(id) <= maxID }

// ResultIn looks for the result of the call toolUseID in the last tail bytes of the transcript at
// path, for a judgement that needs it before a follower has read it: the text the call showed,
// and whether a result was found (an error result is found, holding no text). The file is read
// as a transcript is everywhere: never through a link, never from anything but a regular file.
func ResultIn(path, toolUseID string, tail int64) (text string, found bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false, fmt.Errorf("open transcript %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("stat transcript %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("transcript %s is not a regular file", path)
	}
	off := max(0, fi.Size()-tail)
	data := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return "", false, fmt.Errorf("read transcript %s: %w", path, err)
	}
	lines := bytes.Split(data, []byte("\n"))
	if off > 0 {
		lines = lines[1:] // the first is a part of a line
	}
	for _, line := range lines {
		if !bytes.Contains(line, []byte(toolUseID)) {
			continue // most lines: not parsed at all
		}
		for _, it := range Parse(line) {
			if it.Kind == Result && it.ToolUseID == toolUseID {
				if it.IsError {
					return "", true, nil
				}
				return it.Text(), true, nil
			}
		}
	}
	return "", false, nil
}
