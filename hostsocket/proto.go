package hostsocket

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
