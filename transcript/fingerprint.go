package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Fingerprint is what reconciliation keeps of a tool call's input: a hash of each top-level
// member's canonical value, so that the input the guard judged and the input the transcript shows
// can be compared without keeping either (inputs hold whole file contents).
type Fingerprint map[string]uint64

// maxFingerprintKeys bounds the members kept, maxKeyBytes the length of a member's name; real
// inputs have a handful of short ones. Past either the input is hashed whole.
const maxFingerprintKeys, maxKeyBytes = 64, 128

// Size is what the fingerprint holds in memory, in bytes, map overhead included.
func (f Fingerprint) Size() int64 {
	n := int64(48)
	for k := range f {
		n += int64(len(k) + 8 + 16)
	}
	return n
}

// wholeKey stands for an input that is not a JSON object: its whole canonical value.
const wholeKey = "\x00whole"

// FingerprintOf reads raw, a tool input, into its fingerprint.
func FingerprintOf(raw json.RawMessage) Fingerprint {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || len(members) > maxFingerprintKeys {
		return Fingerprint{wholeKey: hashValue(raw)}
	}
	fp := make(Fingerprint, len(members))
	for k, v := range members {
		if len(k) > maxKeyBytes {
			return Fingerprint{wholeKey: hashValue(raw)}
		}
		fp[k] = hashValue(v)
	}
	return fp
}

// hashValue hashes the canonical form of a JSON value: decoded and encoded again, so that key
// order, spacing and escapes do not count; raw bytes when it does not decode.
func hashValue(v json.RawMessage) uint64 {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	canon := []byte(v)
	if d.Decode(&x) == nil {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if e.Encode(x) == nil {
			canon = bytes.TrimSpace(b.Bytes())
		}
	}
	sum := sha256.Sum256(canon)
	return binary.BigEndian.Uint64(sum[:8])
}

// defaults are the hashes of the values Claude Code fills in for members the model left out
// (the hook sees "replace_all": false on an Edit whose transcript has no such member).
var defaults = map[uint64]bool{
	hashValue(json.RawMessage(`false`)): true, hashValue(json.RawMessage(`null`)): true,
	hashValue(json.RawMessage(`""`)): true, hashValue(json.RawMessage(`0`)): true,
	hashValue(json.RawMessage(`[]`)): true, hashValue(json.RawMessage(`{}`)): true,
}

// Same reports whether the input judged is the input that ran: every member the transcript shows
// has the value judged, and the judged input has no other member but ones holding a default.
func Same(judged, ran Fingerprint) bool {
	for k, h := range ran {
		if jh, ok := judged[k]; !ok || jh != h {
			return false
		}
	}
	for k, h := range judged {
		if _, ok := ran[k]; !ok && !defaults[h] {
			return false
		}
	}
	return true
}

// maxPreview bounds the input kept of a call for its record when the call turns out unguarded.
const maxPreview = 1024

// Preview is what is kept of an input for a record: the input itself when small, otherwise its
// size, hash and first bytes.
func Preview(raw json.RawMessage) json.RawMessage {
	if len(raw) <= maxPreview {
		return append(json.RawMessage(nil), raw...)
	}
	sum := sha256.Sum256(raw)
	start := strings.ToValidUTF8(string(raw[:maxPreview/8]), "") // at most 6 bytes each once escaped
	out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(raw), "sha256": hex.EncodeToString(sum[:]), "start": start})
	return out
}
