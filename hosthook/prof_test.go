package hosthook

import (
	"bytes"
	"testing"
)

func BenchmarkAnswerTmp(b *testing.B) {
	t := &testing.T{}
	_ = t
	m := newMacB(b, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	p := []byte(`{"session_id":"s","cwd":"/Users/alex/project","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}`)
	o := m.options(true)
	for b.Loop() {
		Answer(bytes.NewReader(p), o)
	}
}
