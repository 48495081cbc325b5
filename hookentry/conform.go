package hookentry

import (
	"encoding/json"
	"fmt"

	"github.com/coworkbridge/coworkbridge/session"
)

// A Validator names the top-level keys of a settings document that fail the CLI's settings
// schema (settingsschema.Schema); an error means the document fails as a whole.
type Validator interface {
	BadKeys(data []byte) ([]string, error)
}

// Conform leaves out of merged the top-level values that fail the schema, and returns their keys.
// A failing "hooks" is replaced by our group alone; a file that still fails, or fails as a whole,
// is replaced by our entry alone. The caller keeps the original aside.
func Conform(sc Validator, merged []byte, e Entry) ([]byte, []string, error) {
	bad, err := sc.BadKeys(merged)
	if err == nil && len(bad) == 0 {
		return merged, nil, nil
	}
	if err == nil {
		top, perr := parseObject(merged)
		if perr != nil {
			return nil, nil, fmt.Errorf("merge %s: %w", session.SettingsFile, perr)
		}
		for _, k := range bad {
			if k == "hooks" {
				top.set("hooks", marshal(map[string]any{"PreToolUse": []json.RawMessage{e.group()}}))
				continue
			}
			top.del(k)
		}
		fixed, ierr := indent(top.encode())
		if ierr == nil {
			if again, aerr := sc.BadKeys(fixed); aerr == nil && len(again) == 0 {
				return fixed, bad, nil
			}
		}
	}
	alone, _, merr := Merge(nil, e)
	if merr != nil {
		return nil, nil, fmt.Errorf("merge %s: %w", session.SettingsFile, merr)
	}
	if again, aerr := sc.BadKeys(alone); aerr != nil || len(again) > 0 {
		return nil, nil, fmt.Errorf("our own hook entry fails the settings schema (%v %v): report this to the coworkbridge maintainers", again, aerr)
	}
	return alone, []string{"(everything)"}, nil
}
