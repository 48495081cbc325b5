package claudehook

import (
	"encoding/json"
	"time"
)

// CommandHook is one command hook as settings.json lists it.
type CommandHook struct {
	Type    string `json:"type"` // "command"
	Command string `json:"command"`
	Timeout int    `json:"timeout"` // seconds, as Claude Code counts them
}

// HookGroup is one group of hooks under an event in settings.json's "hooks" object.
type HookGroup struct {
	Matcher string        `json:"matcher"`
	Hooks   []CommandHook `json:"hooks"`
}

// CommandGroup is the PreToolUse group that runs command before every tool (matcher "*"),
// killed by Claude Code after timeout (whole seconds).
func CommandGroup(command string, timeout time.Duration) HookGroup {
	return HookGroup{Matcher: "*", Hooks: []CommandHook{{Type: "command", Command: command, Timeout: int(timeout / time.Second)}}}
}

// PreToolUseCommands lists the commands of the PreToolUse hooks a settings document declares, in
// order; none when it is not a settings document Claude Code could read.
func PreToolUseCommands(settings []byte) []string {
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"PreToolUse"`
		} `json:"hooks"`
	}
	if json.Unmarshal(settings, &s) != nil {
		return nil
	}
	var out []string
	for _, g := range s.Hooks.PreToolUse {
		for _, h := range g.Hooks {
			out = append(out, h.Command)
		}
	}
	return out
}
