package claudehook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// EventConfigChange is the event Claude Code sends a managed hook about a second after a settings
// file changes (verified with CLI 2.1.329); its answer can stop the reload in that session.
const EventConfigChange = "ConfigChange"

// ConfigChange is the payload of a ConfigChange hook.
type ConfigChange struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	// Source is "user_settings", "project_settings", "local_settings", "policy_settings" or "skills".
	Source   string `json:"source"`
	FilePath string `json:"file_path"`
}

// SourcePolicy is the managed level, whose changes a hook cannot block.
const SourcePolicy = "policy_settings"

// IsConfigChange reports whether data is a ConfigChange payload, as EventName says, without a
// JSON decoder for a payload that cannot be one: the system hook is a process per tool call,
// and a decoder's first use is a tenth of it. A string can spell "ConfigChange" only as those
// letters or through a \u escape (no other escape, and no byte JSON replaces, makes a letter),
// so a payload with neither in its text is not one.
func IsConfigChange(data []byte) bool {
	if !bytes.Contains(data, []byte(EventConfigChange)) && !bytes.Contains(data, []byte(`\u`)) {
		return false
	}
	return EventName(data) == EventConfigChange
}

// EventName returns the hook_event_name of a payload ("" when it has none or is not JSON).
func EventName(data []byte) string {
	var p struct {
		Snake string `json:"hook_event_name"`
		Camel string `json:"hookEventName"`
	}
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	if p.Snake != "" {
		return p.Snake
	}
	return p.Camel
}

// ParseConfigChange decodes a ConfigChange payload; one that names no file cannot be judged.
func ParseConfigChange(data []byte) (ConfigChange, error) {
	var c ConfigChange
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("decode ConfigChange payload: %w", err)
	}
	if c.FilePath == "" {
		return c, errors.New("decode ConfigChange payload: it names no settings file")
	}
	return c, nil
}

// BlockChange is the output that stops a settings reload in the running session.
func BlockChange(reason string) []byte {
	out, _ := json.Marshal(struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{"block", reason})
	return out
}
