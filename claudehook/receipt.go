package claudehook

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Receipt is what the host hook leaves in a session's host channel for a call it judged itself:
// the call's id and tool, whether the call was denied, and a fingerprint of its input (a hash of
// each top-level member, never the input), so that reconciliation counts the call the transcript
// shows as guarded, and can tell a call rewritten after the judgement.
type Receipt struct {
	V           int               `json:"v"`
	ToolUseID   string            `json:"tool_use_id"`
	Tool        string            `json:"tool"`
	Denied      bool              `json:"denied,omitempty"`
	Fingerprint map[string]uint64 `json:"fingerprint"`
	// Untrusted and Private are what the call took in and read for its session's flow (package
	// flow), each "" when nothing; a call denied takes in and reads nothing.
	Untrusted string `json:"untrusted,omitempty"`
	Private   string `json:"private,omitempty"`
	// Aside: the managed-settings drop-in's hook saw the call and left it to the session's own
	// hook, which reports it (without lockdown). It judged nothing; the receipt only says that
	// the drop-in is in force for the session, which Claude Code runs first.
	Aside bool `json:"aside,omitempty"`
}

// MaxReceipt bounds a receipt file: a fingerprint holds at most 64 members.
const MaxReceipt = 16 << 10

// ErrBadReceipt: a receipt file that is not one the host hook writes.
var ErrBadReceipt = errors.New("not a receipt of the host hook")

// ParseReceipt reads one receipt file, refusing what the host hook never writes.
func ParseReceipt(data []byte) (Receipt, error) {
	var r Receipt
	if len(data) > MaxReceipt {
		return r, fmt.Errorf("%w: %d bytes", ErrBadReceipt, len(data))
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%w: %v", ErrBadReceipt, err)
	}
	if r.V != 1 || r.ToolUseID == "" || r.Fingerprint == nil || len(r.ToolUseID) > 128 || len(r.Tool) > 256 || len(r.Fingerprint) > 64 ||
		len(r.Untrusted) > 1024 || len(r.Private) > 1024 {
		return r, fmt.Errorf("%w: version %d, id of %d bytes, %d fingerprint members", ErrBadReceipt, r.V, len(r.ToolUseID), len(r.Fingerprint))
	}
	return r, nil
}
