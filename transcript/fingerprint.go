package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/coworkbridge/coworkbridge/internal/lazy"
	"github.com/coworkbridge/coworkbridge/internal/nameset"
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
func FingerprintOf(raw json.RawMessage) Fingerprint { return FingerprintIn(raw, "") }

// FingerprintIn is FingerprintOf for a call made in the folder cwd: a relative file path is
// taken as Claude Code takes it, joined with cwd, so that the hook's absolute spelling and the
// transcript's relative one are one input.
func FingerprintIn(raw json.RawMessage, cwd string) Fingerprint {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || len(members) > maxFingerprintKeys {
		return Fingerprint{wholeKey: hashValue(raw)}
	}
	fp := make(Fingerprint, len(members))
	for k, v := range members {
		if len(k) > maxKeyBytes {
			return Fingerprint{wholeKey: hashValue(raw)}
		}
		if pathMembers.Has(k) {
			v = absolute(v, cwd)
			fp.addPath(k, v)
		}
		fp[k] = hashValue(v)
	}
	return fp
}

// pathMembers are the members that name a file. The model may write one relative to the
// session's folder; Claude Code makes it absolute before its hooks see it, while its transcript
// keeps it as written. Both spellings of one file are the same input.
var pathMembers = nameset.Of("file_path", "notebook_path")

// Beside a path member's hash, a fingerprint keeps what lets a relative spelling match an
// absolute one without keeping the path: for a relative path, its number of components
// (relKey); for an absolute one, the hash of its last n components for each n (tailKey).
const maxTail = 16

func relKey(k string) string         { return "\x00rel:" + k }
func tailKey(k string, n int) string { return "\x00tail:" + k + ":" + strconv.Itoa(n) }

func (fp Fingerprint) addPath(k string, v json.RawMessage) {
	var p string
	if json.Unmarshal(v, &p) != nil || p == "" {
		return
	}
	parts := strings.Split(path.Clean(p), "/")
	if !strings.HasPrefix(p, "/") {
		if len(parts) <= maxTail && !slices.Contains(parts, "..") {
			fp[relKey(k)] = uint64(len(parts))
			fp[relHashKey(k)] = hashString(strings.Join(parts, "/"))
		}
		return
	}
	for n := 1; n <= maxTail && n < len(parts); n++ {
		fp[tailKey(k, n)] = hashString(strings.Join(parts[len(parts)-n:], "/"))
	}
}

// absolute is a path member made absolute against cwd, when it is relative and cwd is known.
func absolute(v json.RawMessage, cwd string) json.RawMessage {
	var p string
	if !strings.HasPrefix(cwd, "/") || json.Unmarshal(v, &p) != nil || p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return v
	}
	abs, err := json.Marshal(path.Join(cwd, p))
	if err != nil {
		return v
	}
	return abs
}

func hashString(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// samePath reports whether member k names the same file in a and b: the same spelling, or one
// relative spelling that is the other's absolute path's tail.
func samePath(a, b Fingerprint, k string) bool {
	if a[k] == b[k] {
		return true
	}
	for _, pair := range [2][2]Fingerprint{{a, b}, {b, a}} {
		rel, abs := pair[0], pair[1]
		if n, ok := rel[relKey(k)]; ok {
			if h, ok := abs[tailKey(k, int(n))]; ok && h == rel.relHash(k) {
				return true
			}
		}
	}
	return false
}

// relHash is the hash of a relative path member as its tail would be hashed; the member's own
// hash is of its JSON value, so the clean path is hashed again at fingerprinting (relHashKey).
func (fp Fingerprint) relHash(k string) uint64 { return fp[relHashKey(k)] }

func relHashKey(k string) string { return "\x00relhash:" + k }

// internal reports a key kept beside the members, not a member.
func internal(k string) bool { return strings.HasPrefix(k, "\x00") && k != wholeKey }

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
// (the hook sees "replace_all": false on an Edit whose transcript has no such member). Made when
// first needed: hashing them at start-up would cost every hook process a hundred allocations.
var defaults = lazy.Value[map[uint64]bool]{Make: func() map[uint64]bool {
	return map[uint64]bool{
		hashValue(json.RawMessage(`false`)): true, hashValue(json.RawMessage(`null`)): true,
		hashValue(json.RawMessage(`""`)): true, hashValue(json.RawMessage(`0`)): true,
		hashValue(json.RawMessage(`[]`)): true, hashValue(json.RawMessage(`{}`)): true,
	}
}}

// Same reports whether the input judged is the input that ran: every member the transcript shows
// has the value judged, and the judged input has no other member but ones holding a default.
func Same(judged, ran Fingerprint) bool {
	for k, h := range ran {
		switch jh, ok := judged[k]; {
		case internal(k):
		case !ok:
			return false
		case pathMembers.Has(k):
			if !samePath(judged, ran, k) {
				return false
			}
		case jh != h:
			return false
		}
	}
	for k, h := range judged {
		if _, ok := ran[k]; !ok && !internal(k) && !defaults.Get()[h] {
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
