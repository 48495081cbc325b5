package managedconfig

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// FieldLine is the line of data on which the field named by a Problem (a dotted path such as
// "policy.rule_modes.foo", with [i] for list items) is written, or of its nearest enclosing field
// that is written; 0 when none is (a missing field, or data that is not JSON).
func FieldLine(data []byte, field string) int {
	if field == "" {
		return 0
	}
	want := strings.ReplaceAll(field, "[", ".[")
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		path    string
		inArray bool
		index   int
	}
	var stack []frame
	best, bestLen := 0, 0
	note := func(path string, off int64) {
		if (path == want || strings.HasPrefix(want, path+".")) && len(path) > bestLen {
			best, bestLen = bytes.Count(data[:off], []byte("\n"))+1, len(path)
		}
	}
	expectKey := false
	var pending string // the path of the value about to be read
	for {
		tok, err := dec.Token()
		if err != nil {
			return best
		}
		if len(stack) > 0 && stack[len(stack)-1].inArray {
			top := &stack[len(stack)-1]
			pending = top.path + ".[" + strconv.Itoa(top.index) + "]"
			if d, ok := tok.(json.Delim); !ok || d != ']' {
				note(pending, dec.InputOffset())
				top.index++
			}
		}
		if expectKey {
			if k, ok := tok.(string); ok {
				parent := stack[len(stack)-1].path
				pending = k
				if parent != "" {
					pending = parent + "." + k
				}
				note(pending, dec.InputOffset())
				expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{path: pending})
		case json.Delim('['):
			stack = append(stack, frame{path: pending, inArray: true})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		expectKey = len(stack) > 0 && !stack[len(stack)-1].inArray && dec.More()
	}
}
