package facts

import (
	"encoding/json"
	"strings"
)

// ParseJSONC reads JSON with comments and trailing commas, as editors write their
// configuration (VS Code's settings and tasks, devcontainer.json). It reports false for
// anything that is not an object once comments and trailing commas are gone.
func ParseJSONC(text string) (map[string]any, bool) {
	var v map[string]any
	if json.Unmarshal([]byte(stripJSONC(text)), &v) != nil || v == nil {
		return nil, false
	}
	return v, true
}

// stripJSONC removes // and /* */ comments and commas before a closing bracket, outside strings.
func stripJSONC(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			b.WriteByte(c)
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String() // an unclosed comment: the rest is comment, and the JSON ends short
			}
			i += end + 3
			b.WriteByte(' ')
		case c == ',' && closesNext(s[i+1:]):
			// a trailing comma
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// closesNext reports whether the next significant character (past spaces and comments) closes an
// object or array.
func closesNext(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == '/' && i+1 < len(s) && s[i+1] == '/':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return false
			}
			i += end + 3
		default:
			return c == '}' || c == ']'
		}
	}
	return false
}
