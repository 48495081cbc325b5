package hostsocket

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
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
// newline (a head has none, so a request of one object has none either). A hook's request
// (a call: every field a string, a number or the raw flag) is written out here: a hook is a
// process per tool call, and encoding/json's first use, its reflection and the pages it
// touches, was about a tenth of the system hook's whole process. Any other is json.Marshal's.
func encode(req Request) ([]byte, error) {
	payload := req.Payload
	req.Payload, req.Raw = nil, payload != nil
	var b []byte
	if req.Kind == KindCall {
		b = appendCallHead(make([]byte, 0, 64+len(req.ConfigDir)+len(req.HostSession)+1+len(payload)), req)
	} else {
		var err error
		if b, err = json.Marshal(req); err != nil {
			return nil, err
		}
	}
	if payload != nil {
		b = append(append(b, '\n'), payload...)
	}
	return b, nil
}

// appendCallHead appends the head of a call as json.Marshal writes it, member for member, but
// for its strings' escapes (see appendString); decode reads both alike.
func appendCallHead(b []byte, req Request) []byte {
	b = strconv.AppendInt(append(b, `{"v":`...), int64(req.V), 10)
	b = appendString(append(b, `,"kind":`...), req.Kind)
	if req.ConfigDir != "" {
		b = appendString(append(b, `,"config_dir":`...), req.ConfigDir)
	}
	if req.HostSession != "" {
		b = appendString(append(b, `,"host_session":`...), req.HostSession)
	}
	if req.Raw {
		b = append(b, `,"raw":true`...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: quotes, backslashes and control characters escaped,
// bytes that are not UTF-8 as U+FFFD (json.Unmarshal would read them so), and the rest as it
// is. It is held to json.Marshal by FuzzCallHead: both read back as the same string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
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

// noObjection is the answer the daemon writes (json.Marshal of Answer) when the hook prints
// nothing: most calls'. Read as it is, it costs a hook no JSON decoder.
const noObjection = `{"v":1}`

// readAnswer reads the daemon's answer, of at most maxAnswer bytes, until EOF (the daemon
// closes); the usual one without a decoder.
func readAnswer(r io.Reader, a *Answer) error {
	data, err := io.ReadAll(io.LimitReader(r, maxAnswer+1))
	switch {
	case err != nil:
		return err
	case len(data) > maxAnswer:
		return errTooLarge
	case string(data) == noObjection:
		*a = Answer{V: Version}
		return nil
	}
	if err := json.Unmarshal(data, a); err != nil {
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
