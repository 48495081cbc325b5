package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The log's lines are written by hand rather than by encoding/json's reflection: a record is
// written for every tool call, and reflecting over it and re-encoding its input cost more than
// judging the call. The bytes are encoding/json's own (with HTML escaping off), which the tests
// and a fuzz target hold it to: readers, replays and the hash chain see no difference.

// appendRecord appends r as one JSON object, its fields in the struct's order, with no newline.
// r.Input is appended as it is: Encode has made it compact JSON (see sanitizeInput).
func appendRecord(b []byte, r *Record) ([]byte, error) {
	b = append(b, '{')
	if r.Prev != "" {
		b = appendField(b, "prev", r.Prev)
		b = append(b, ',')
	}
	b = append(b, `"schema":`...)
	b = strconv.AppendInt(b, int64(r.Schema), 10)
	b = append(b, `,"ts":`...)
	var err error
	if b, err = appendTime(b, r.TS); err != nil {
		return nil, err
	}
	b = appendMember(b, "rid", r.RID)
	b = appendMember(b, "session", r.Session)
	b = appendMember(b, "agent", r.Agent)
	b = appendMember(b, "transport", r.Transport)
	b = appendMember(b, "mode", r.Mode)
	b = append(b, `,"enforced":`...)
	b = strconv.AppendBool(b, r.Enforced)
	b = appendMember(b, "tool", r.Tool)
	b = append(b, `,"input":`...)
	b = append(b, r.Input...)
	b = appendOptional(b, "cwd", r.Cwd)
	b = appendMember(b, "decision", string(r.Decision))
	b = appendOptional(b, "rule", r.Rule)
	b = appendOptional(b, "reason", r.Reason)
	b = appendOptional(b, "matched", r.Matched)
	b = appendOptional(b, "nudge", r.Nudge)
	b = appendStrings(b, "effects", r.Effects)
	b = append(b, `,"latency_us":`...)
	b = strconv.AppendInt(b, r.LatencyUS, 10)
	b = appendOptional(b, "host", r.Host)
	b = appendOptional(b, "user", r.User)
	b = appendOptional(b, "version", r.Version)
	b = appendOptional(b, "config_hash", r.ConfigHash)
	b = appendOptional(b, "config_origin", r.ConfigOrigin)
	b = appendOptional(b, "input_omitted", r.InputOmitted)
	b = appendOptional(b, "tool_use_id", r.ToolUseID)
	b = appendOptional(b, "cli_session_id", r.CLISessionID)
	b = appendOptional(b, "prompt_id", r.PromptID)
	b = appendOptional(b, "cli_version", r.CLIVersion)
	b = appendStrings(b, "flow", r.Flow)
	return append(b, '}'), nil
}

// appendStrings appends ,"key":[...] when ss holds anything.
func appendStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendField appends "key":"value"; keys are the package's own and need no escaping.
func appendField(b []byte, key, value string) []byte {
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	return appendString(b, value)
}

// appendMember appends a field after another one.
func appendMember(b []byte, key, value string) []byte {
	return appendField(append(b, ','), key, value)
}

// appendOptional appends a field after another one unless value is empty (omitempty).
func appendOptional(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	return appendMember(b, key, value)
}

// errYearRange is encoding/json's refusal of a time it cannot write as RFC 3339.
var errYearRange = errors.New("year outside of range [0,9999]")

// appendTime appends t quoted in RFC 3339 with nanoseconds, as time.Time's MarshalJSON does.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: Time.MarshalJSON: %w", errYearRange)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendValue appends a value decoded by encoding/json with UseNumber, objects with their keys
// sorted as encoding/json sorts a map's.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendString(b, x), nil
	case json.Number:
		if x == "" {
			x = "0" // as encoding/json writes it
		}
		if !isNumber(string(x)) {
			return nil, fmt.Errorf("json: invalid number literal %q", string(x))
		}
		return append(b, x...), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			var err error
			if b, err = appendValue(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	default:
		return nil, fmt.Errorf("json: unsupported type: %T", v)
	}
}

// isNumber reports whether s is a JSON number. Numbers decoded with UseNumber always are; the
// check keeps a value built by other means from breaking the line.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
	}
	digits := func() int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		return n
	}
	switch n := digits(); {
	case n == 0:
		return false
	case s[0] == '0' && n > 1:
		return false
	default:
		s = s[n:]
	}
	if len(s) > 0 && s[0] == '.' {
		s = s[1:]
		n := digits()
		if n == 0 {
			return false
		}
		s = s[n:]
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		n := digits()
		if n == 0 {
			return false
		}
		s = s[n:]
	}
	return s == ""
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json quotes a string with HTML escaping off: quote,
// backslash and control characters escaped, invalid UTF-8 replaced by U+FFFD, and U+2028 and
// U+2029 escaped, since some JavaScript readers take them for line ends.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
