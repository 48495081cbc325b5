package claudehook

import (
	"encoding/json"
	"time"
)

// FailBlock is the onFailure value that makes Claude Code block a call whose hook timed out, was
// killed or failed, instead of letting it run (verified with CLI 2.1.329). Every hook coworkbridge
// installs carries it: a guard that can be stopped must not be a guard that can be skipped.
const FailBlock = "block"

// CommandHook is one command hook as settings.json lists it.
type CommandHook struct {
	Type    string `json:"type"` // "command"
	Command string `json:"command"`
	// Args, when present, makes Claude Code execute Command directly with these arguments, with no
	// shell in between.
	Args      []string `json:"args,omitempty"`
	Timeout   int      `json:"timeout"` // seconds, as Claude Code counts them
	OnFailure string   `json:"onFailure,omitempty"`
}

// HookGroup is one group of hooks under an event in settings.json's "hooks" object.
type HookGroup struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []CommandHook `json:"hooks"`
}

// CommandGroup is the PreToolUse group that runs command through the shell before every tool
// (matcher "*"), killed by Claude Code after timeout (whole seconds); its failure blocks the call.
func CommandGroup(command string, timeout time.Duration) HookGroup {
	return HookGroup{Matcher: "*", Hooks: []CommandHook{{Type: "command", Command: command,
		Timeout: int(timeout / time.Second), OnFailure: FailBlock}}}
}

// ExecGroup is a group that executes program with args directly (no shell), for every matcher
// ("" for events that take none); its failure blocks.
func ExecGroup(matcher, program string, args []string, timeout time.Duration) HookGroup {
	return HookGroup{Matcher: matcher, Hooks: []CommandHook{{Type: "command", Command: program, Args: args,
		Timeout: int(timeout / time.Second), OnFailure: FailBlock}}}
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
