package hostsocket

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Version is the protocol's; a daemon answers a request of another version with an error the
// hook turns into its failure answer.
const Version = 1

// MaxRequest bounds a request: a payload of up to 16 MiB (the hook's own limit) and its frame.
// The largest tool input the CLI sends is a Write or Edit of what the model wrote in one turn:
// some hundreds of kilobytes of text, a few megabytes at JSON's worst escaping; 16 MiB leaves
// room for any of them and for a notebook's cells, and past it a call is refused, unread.
const MaxRequest = 16<<20 + 64<<10

// maxAnswer bounds an answer: a hook's output or a status.
const maxAnswer = 4 << 20

// Request kinds.
const (
	KindCall   = "call"   // judge a tool call: Payload, ConfigDir, HostSession
	KindStatus = "status" // the caller's view of the daemon's health
)

// Request is what a hook (or status) sends. Everything in it is the caller's to say: the daemon
// takes the caller's identity from the kernel, and checks that the session named is the caller's.
type Request struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	// Payload is the hook's stdin as Claude Code gave it.
	Payload json.RawMessage `json:"payload,omitempty"`
	// ConfigDir and HostSession are the hook's CLAUDE_CONFIG_DIR and CLAUDE_CODE_HOST_SESSION_ID.
	ConfigDir   string `json:"config_dir,omitempty"`
	HostSession string `json:"host_session,omitempty"`
	// Raw: the payload is not in this object but follows it on the wire, after a newline, as the
	// hook read it (see Call): the daemon parses it once, as a hook's payload, instead of once
	// more as a member of the request. A request without it is one object, as before.
	Raw bool `json:"raw,omitempty"`
	// Oversized, set by the server only, is how much it read of a request larger than
	// MaxRequest before it stopped: the call is refused without being read whole.
	Oversized int64 `json:"-"`
}

// Answer is the daemon's reply.
type Answer struct {
	V int `json:"v"`
	// Output is what the hook prints: empty for no objection.
	Output json.RawMessage `json:"output,omitempty"`
	// Off: coworkbridge is switched off on this Mac; the hook lets the call be.
	Off bool `json:"off,omitempty"`
	// Status is a status request's answer.
	Status json.RawMessage `json:"status,omitempty"`
	// Error says why the daemon could not answer; the hook fails as it would alone.
	Error string `json:"error,omitempty"`
}

// Peer is the caller as the kernel names it.
type Peer struct {
	UID, GID uint32
	// PID is the calling process, where the platform says (0 otherwise).
	PID int32
}

var errTooLarge = errors.New("larger than the protocol allows")

// encode is req on the wire: its payload, when there is one, raw after the rest of it and a
// newline (json.Marshal never writes a newline, so a request of one object has none).
func encode(req Request) ([]byte, error) {
	payload := req.Payload
	req.Payload, req.Raw = nil, payload != nil
	head, err := json.Marshal(req)
	if err != nil || payload == nil {
		return head, err
	}
	return slices.Concat(head, []byte{'\n'}, payload), nil
}

// decode reads a request as encode writes it, or as one object. The raw payload is data's own.
func decode(data []byte, req *Request) error {
	head, payload, raw := bytes.Cut(data, []byte{'\n'})
	if !raw {
		head = data
	}
	if err := json.Unmarshal(head, req); err != nil {
		return fmt.Errorf("not a message of this protocol: %w", err)
	}
	switch {
	case req.Raw && raw:
		req.Payload = payload
	case req.Raw, raw && len(bytes.TrimSpace(payload)) > 0:
		return errors.New("not a message of this protocol: the payload and the request's head disagree")
	}
	return nil
}

// readJSON reads one JSON value of at most limit bytes until EOF (the writer half-closes).
func readJSON(r io.Reader, limit int64, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > limit {
		return errTooLarge
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("not a message of this protocol: %w", err)
	}
	return nil
}

// DefaultPath is where a system-mode daemon listens on the platform goos: in the folder the
// system empties at boot, as a socket's should be.
func DefaultPath(goos string) string {
	if goos == "darwin" {
		return "/var/run/coworkbridge/hook.sock"
	}
	return "/run/coworkbridge/hook.sock"
}
