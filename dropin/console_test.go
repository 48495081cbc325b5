package dropin

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The console JSON is what the admin pastes: a golden file per configuration holds it, so that a
// change to what the drop-in carries shows in review as a change to what admins are told.
func TestConsoleSettingsCarryTheDropInsHookAndLockdown(t *testing.T) {
	lockdown := managedconfig.Config{Lockdown: true, ForceRemoteSettingsRefresh: true, RequiredMinimumVersion: "2.1.329"}
	lockdown.Policy.RestrictMCPServers, lockdown.Policy.AllowedMCPServers = true, []string{"github"}
	for _, tt := range []struct {
		name string
		h    Hook
		cfg  managedconfig.Config
	}{
		{"plain", Hook{Exe: exe}, managedconfig.Config{}},
		{"lockdown", Hook{Exe: exe}, lockdown},
		{"system", Hook{Exe: exe, System: true}, managedconfig.Config{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, notes, err := Console(tt.h, tt.cfg, schema(t))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "console", tt.name+".golden")
			if *update {
				os.WriteFile(golden, data, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil || string(want) != string(data) {
				t.Errorf("console settings differ from %s (go test ./dropin -run Console -update):\n%s", golden, data)
			}
			if all := strings.Join(notes, "\n"); !strings.Contains(all, "MCP server definitions cannot be delivered") ||
				!strings.Contains(all, "refuses every tool call") || strings.Contains(all, "forceRemoteSettingsRefresh") != tt.cfg.ForceRemoteSettingsRefresh {
				t.Errorf("notes do not say what the console cannot carry and what it costs:\n%s", all)
			}
			if probs := CheckConsole(data, data, schema(t)); len(probs) != 0 {
				t.Errorf("the console settings fail their own check: %v", probs)
			}
		})
	}
}

// merged is the organisation's own console settings with ours merged in, then changed by edit.
func merged(t *testing.T, ours []byte, edit func(map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	json.Unmarshal(ours, &doc)
	doc["cleanupPeriodDays"] = 30
	doc["permissions"] = map[string]any{"deny": []any{"WebFetch"}}
	hooks := doc["hooks"].(map[string]any)
	hooks["PreToolUse"] = append([]any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": "/opt/org/audit"}}}},
		hooks["PreToolUse"].([]any)...)
	if edit != nil {
		edit(doc)
	}
	data, _ := json.Marshal(doc)
	return data
}

func TestCheckConsoleFindsWhatTheOrganisationsSettingsLeaveOut(t *testing.T) {
	cfg := managedconfig.Config{Lockdown: true}
	want, err := Content(Hook{Exe: exe}, cfg, schema(t))
	if err != nil {
		t.Fatal(err)
	}
	hookOf := func(doc map[string]any, event string) map[string]any {
		groups := doc["hooks"].(map[string]any)[event].([]any)
		return groups[len(groups)-1].(map[string]any)["hooks"].([]any)[0].(map[string]any)
	}
	tests := []struct {
		name string
		data []byte
		want string // "" for no problem
	}{
		{"ours merged into the organisation's", merged(t, want, nil), ""},
		{"our hook left out", merged(t, want, func(d map[string]any) {
			h := d["hooks"].(map[string]any)
			h["PreToolUse"] = h["PreToolUse"].([]any)[:1]
		}), "hooks.PreToolUse lacks coworkbridge's group"},
		{"our hook without onFailure", merged(t, want, func(d map[string]any) { delete(hookOf(d, "PreToolUse"), "onFailure") }), "hooks.PreToolUse lacks"},
		{"our hook through a shell", merged(t, want, func(d map[string]any) { delete(hookOf(d, "PreToolUse"), "args") }), "hooks.PreToolUse lacks"},
		{"the settings-change hook left out", merged(t, want, func(d map[string]any) { delete(d["hooks"].(map[string]any), "ConfigChange") }), "hooks.ConfigChange lacks"},
		{"lockdown undone", merged(t, want, func(d map[string]any) { d["allowManagedHooksOnly"] = false }), "allowManagedHooksOnly must be true"},
		{"every hook switched off", merged(t, want, func(d map[string]any) { d["disableAllHooks"] = true }), "disableAllHooks"},
		{"not settings", []byte(`["hooks"]`), "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probs := CheckConsole(tt.data, want, schema(t))
			all := errors.Join(probs...)
			switch {
			case tt.want == "" && len(probs) != 0:
				t.Errorf("problems in good settings: %v", all)
			case tt.want != "" && (all == nil || !strings.Contains(all.Error(), tt.want)):
				t.Errorf("problems %v, want one saying %q", all, tt.want)
			case tt.want != "" && !errors.Is(all, ErrConsole):
				t.Errorf("%v does not wrap ErrConsole", all)
			}
		})
	}
}

// The console check finds our hook by any program coworkbridge ships, so that the settings it
// compares with the organisation's are the mode's, and an older entry running the whole program
// (`coworkbridge hook`) is compared with what this release writes, and found different.
func TestConsoleHookKnowsEachOfOurHookPrograms(t *testing.T) {
	dir := filepath.Dir(exe)
	for _, tt := range []struct {
		command string
		want    Hook
		ok      bool
	}{
		{UserHookProgram(exe), Hook{Exe: exe}, true},
		{HookProgram(exe), Hook{Exe: exe, System: true}, true},
		{exe, Hook{Exe: exe}, true},
		{"coworkbridge-userhook", Hook{Exe: "coworkbridge"}, false},
		{filepath.Join(dir, "coworkbridge-userhook-old"), Hook{}, false},
	} {
		data, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "*",
			"hooks": []any{map[string]any{"type": "command", "command": tt.command, "args": []string{"--per-user"}}}}}}})
		got, ok := ConsoleHook(data)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ConsoleHook %+v %v, want %+v %v", tt.command, got, ok, tt.want, tt.ok)
		}
	}
	want, _ := Content(Hook{Exe: exe}, managedconfig.Config{}, schema(t))
	old := merged(t, want, func(doc map[string]any) {
		groups := doc["hooks"].(map[string]any)["PreToolUse"].([]any)
		h := groups[len(groups)-1].(map[string]any)["hooks"].([]any)[0].(map[string]any)
		h["command"], h["args"] = exe, []any{"hook"}
	})
	if probs := CheckConsole(old, want, schema(t)); len(probs) == 0 {
		t.Error("console settings running `coworkbridge hook` pass the check of this release's")
	}
}
