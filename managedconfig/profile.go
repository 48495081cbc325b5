package managedconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"howett.net/plist"
)

// ProfileDomain is the preference domain a configuration profile sets for coworkbridge: macOS
// writes the profile's payload to /Library/Managed Preferences/<domain>.plist, as it does for
// every managed app (Santa reads its settings the same way).
const ProfileDomain = "com.coworkbridge.agent"

// managedPreferencesPath is where macOS puts the settings of a configuration profile for the
// whole Mac.
const managedPreferencesPath = "/Library/Managed Preferences/" + ProfileDomain + ".plist"

// IsProfile reports whether path is read as a property list (a configuration profile's managed
// preferences) rather than as JSON.
func IsProfile(path string) bool { return strings.HasSuffix(path, ".plist") }

// profileKeysOfMacOS are keys macOS itself adds to a managed preferences file; they are not
// coworkbridge's settings and are left out.
var profileKeysOfMacOS = []string{"PayloadUUID", "PayloadIdentifier", "PayloadType", "PayloadVersion",
	"PayloadDisplayName", "PayloadDescription", "PayloadOrganization", "PayloadEnabled"}

// ProfileJSON turns managed preferences (an XML or binary property list) into the JSON of a
// managed.json with the same keys, so that one strict parser judges both: a key coworkbridge
// does not know, or a value of the wrong type, is reported exactly as it is in managed.json.
// Dates and data have no JSON counterpart and are refused.
func ProfileJSON(data []byte) ([]byte, error) {
	var v any
	if _, err := plist.Unmarshal(data, &v); err != nil {
		if ix := indexPlist(data); ix.badLine > 0 {
			return nil, fmt.Errorf("line %d: not a property list: %s", ix.badLine, ix.bad)
		}
		return nil, fmt.Errorf("not a property list: %w", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the property list holds a %s, want a dictionary of settings", plistKind(v))
	}
	for _, k := range profileKeysOfMacOS {
		delete(top, k)
	}
	var buf bytes.Buffer
	var probs []Problem
	writeJSON(&buf, top, "", &probs)
	if len(probs) > 0 {
		return nil, &InvalidError{Problems: probs}
	}
	return buf.Bytes(), nil
}

// writeJSON writes v in key order, so that the same profile always gives the same bytes (the
// configuration's hash, and the last-good copy, follow content, not map order). A value JSON
// cannot hold (a date, data, a number that is none) is written as null and added to probs, so
// that one such value hides no other problem of the file.
func writeJSON(buf *bytes.Buffer, v any, path string, probs *[]Problem) {
	switch x := v.(type) {
	case map[string]any:
		buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			writeJSON(buf, x[k], joinPath(path, k), probs)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSON(buf, e, fmt.Sprintf("%s[%d]", path, i), probs)
		}
		buf.WriteByte(']')
	case string, bool, uint64, int64:
		b, _ := json.Marshal(x)
		buf.Write(b)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			*probs = append(*probs, Problem{Field: path, Msg: fmt.Sprintf("%v is not a number a setting can take", x)})
			buf.WriteString("null")
			return
		}
		b, _ := json.Marshal(x)
		buf.Write(b)
	default:
		*probs = append(*probs, Problem{Field: path, Msg: fmt.Sprintf("a %s cannot be a coworkbridge setting; use a string, number, boolean, array or dictionary", plistKind(v))})
		buf.WriteString("null")
	}
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func plistKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "dictionary"
	case []any:
		return "array"
	case []byte:
		return "data value"
	case nil:
		return "nothing"
	}
	if _, ok := v.(interface{ Unix() int64 }); ok {
		return "date"
	}
	return fmt.Sprintf("%T", v)
}
