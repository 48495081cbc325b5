package claudehook

import (
	"encoding/json"
	"testing"
)

func TestParseReceiptTakesOnlyWhatTheHostHookWrites(t *testing.T) {
	good, _ := json.Marshal(Receipt{V: 1, ToolUseID: "toolu_1", Tool: "Bash", Denied: true, Fingerprint: map[string]uint64{"command": 7}})
	if r, err := ParseReceipt(good); err != nil || r.ToolUseID != "toolu_1" || !r.Denied || r.Fingerprint["command"] != 7 {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{`{}`, `{"v":2,"tool_use_id":"x"}`, `{"v":1}`, `[1]`, `{"v":1,"tool_use_id":"x","fingerprint":{"a":-1}}`, string(make([]byte, MaxReceipt+1))} {
		if _, err := ParseReceipt([]byte(bad)); err == nil {
			t.Errorf("%.40q was taken", bad)
		}
	}
}

func FuzzParseReceipt(f *testing.F) {
	f.Add([]byte(`{"v":1,"tool_use_id":"toolu_1","tool":"Bash","fingerprint":{"command":1}}`))
	f.Add([]byte(`{"v":1,"tool_use_id":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReceipt(data)
		if err == nil && (r.ToolUseID == "" || len(r.Fingerprint) > 64 || r.V != 1) {
			t.Fatalf("took %q as %+v", data, r)
		}
	})
}
