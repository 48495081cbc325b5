package dropin

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// Server-managed settings (the Claude.ai admin console's, Admin Settings > Claude Code > Managed
// settings) share the managed tier with the drop-in, and where a CLI has them the drop-in is
// not used at all (verified with CLI 2.1.332: docs/CLAUDE-CODE-FACTS.md). An organisation that
// sets them keeps coworkbridge in force by carrying in the console what the drop-in carries.

// Console is what an organisation's console settings must carry for cfg: the drop-in's own
// content, the same hooks and lockdown keys, merged by the admin into the organisation's other
// settings. Notes say, in order, what the console cannot carry or what carrying it costs.
func Console(h Hook, cfg managedconfig.Config, sc *settingsschema.Schema) (data []byte, notes []string, err error) {
	data, err = Content(h, cfg, sc)
	if err != nil {
		return nil, nil, err
	}
	exe, _ := h.command()
	notes = []string{
		"The console's settings reach every Claude Code of the organisation that signs in, on every computer: where " + exe + " is missing, the hook cannot start and onFailure \"block\" refuses every tool call. Deliver coworkbridge to every such computer first, or keep to the MDM drop-in.",
		"Claude Code 2.1.332 started as Cowork's local agent (CLAUDE_CODE_ENTRYPOINT=local-agent) fetches no server-managed settings: there the MDM drop-in stays the guard, so keep installing it.",
		"MCP server definitions cannot be delivered from the console (Anthropic's documentation); lockdown's allowedMcpServers and allowManagedMcpServersOnly are settings keys and are carried.",
	}
	if cfg.ForceRemoteSettingsRefresh {
		notes = append(notes, "forceRemoteSettingsRefresh is carried: no Claude Code that signs in starts while the settings server cannot be reached.")
	}
	return data, notes, nil
}

// ErrConsole: console settings that leave out, or change, what the drop-in carries.
var ErrConsole = errors.New("the console settings do not carry coworkbridge's managed settings")

// CheckConsole compares an organisation's console settings with what they must carry for want
// (Content's output): valid settings, our hook groups among theirs, every other key of ours with
// our value, and nothing that switches managed hooks off. It returns every problem found.
func CheckConsole(data, want []byte, sc *settingsschema.Schema) []error {
	var got, ours map[string]any
	if err := json.Unmarshal(data, &got); err != nil || got == nil {
		return []error{fmt.Errorf("%w: not a JSON object of settings (%v)", ErrConsole, err)}
	}
	if err := json.Unmarshal(want, &ours); err != nil {
		return []error{fmt.Errorf("read the settings wanted: %w", err)}
	}
	var probs []error
	if err := sc.Check(data); err != nil {
		probs = append(probs, fmt.Errorf("%w: Claude Code's settings schema refuses them: %v", ErrConsole, err))
	}
	if v, ok := got["disableAllHooks"]; ok && v != false {
		probs = append(probs, fmt.Errorf("%w: disableAllHooks in managed settings switches every hook off, coworkbridge's included; remove it", ErrConsole))
	}
	keys := make([]string, 0, len(ours))
	for k := range ours {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "hooks" {
			probs = append(probs, checkConsoleHooks(got["hooks"], ours["hooks"])...)
			continue
		}
		if v, ok := got[k]; !ok || !reflect.DeepEqual(v, ours[k]) {
			want, _ := json.Marshal(ours[k])
			probs = append(probs, fmt.Errorf("%w: %s must be %s", ErrConsole, k, want))
		}
	}
	return probs
}

// checkConsoleHooks finds each of our hook groups among the console's groups of its event.
func checkConsoleHooks(got, ours any) []error {
	theirs, _ := got.(map[string]any)
	want, _ := ours.(map[string]any)
	events := make([]string, 0, len(want))
	for e := range want {
		events = append(events, e)
	}
	slices.Sort(events)
	var probs []error
	for _, event := range events {
		groups, _ := theirs[event].([]any)
		for _, g := range want[event].([]any) {
			if !slices.ContainsFunc(groups, func(h any) bool { return reflect.DeepEqual(h, g) }) {
				b, _ := json.Marshal(g)
				probs = append(probs, fmt.Errorf("%w: hooks.%s lacks coworkbridge's group %s (exec form, onFailure \"block\")", ErrConsole, event, b))
			}
		}
	}
	return probs
}

// ConsoleHook is the coworkbridge hook the console settings in data run before each call: the
// program a PreToolUse hook names, when its name is coworkbridge's or its hook program's.
func ConsoleHook(data []byte) (Hook, bool) {
	for _, cmd := range claudehook.PreToolUseCommands(data) {
		switch filepath.Base(cmd) {
		case "coworkbridge":
			return Hook{Exe: cmd}, filepath.IsAbs(cmd)
		case managedconfig.HookProgramName:
			return Hook{Exe: filepath.Join(filepath.Dir(cmd), "coworkbridge"), System: true}, filepath.IsAbs(cmd)
		case managedconfig.UserHookProgramName:
			return Hook{Exe: filepath.Join(filepath.Dir(cmd), "coworkbridge")}, filepath.IsAbs(cmd)
		}
	}
	return Hook{}, false
}
