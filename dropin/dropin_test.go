package dropin

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

const exe = "/Library/Application Support/CoworkBridge/bin/coworkbridge"

func schema(t *testing.T) *settingsschema.Schema {
	t.Helper()
	sc, err := settingsschema.New()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

type doc struct {
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Command   string   `json:"command"`
			Args      []string `json:"args"`
			OnFailure string   `json:"onFailure"`
		} `json:"hooks"`
	} `json:"hooks"`
	AllowManagedHooksOnly      bool                `json:"allowManagedHooksOnly"`
	AllowedMcpServers          []map[string]string `json:"allowedMcpServers"`
	RequiredMinimumVersion     string              `json:"requiredMinimumVersion"`
	AllowManagedMcpServersOnly bool                `json:"allowManagedMcpServersOnly"`
	DisableSkillShellExecution bool                `json:"disableSkillShellExecution"`
	Env                        map[string]string   `json:"env"`
	ForceRemoteSettingsRefresh bool                `json:"forceRemoteSettingsRefresh"`
}

func parse(t *testing.T, data []byte) doc {
	t.Helper()
	var d doc
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWithoutLockdownTheDropInRunsOnlyOurPreToolUseHookWithoutAShellAndBlocksOnFailure(t *testing.T) {
	data, err := Content(Hook{Exe: exe}, managedconfig.Config{}, schema(t))
	if err != nil {
		t.Fatal(err)
	}
	d := parse(t, data)
	if len(d.Hooks) != 1 || len(d.Hooks["PreToolUse"]) != 1 {
		t.Fatalf("hooks %v", d.Hooks)
	}
	h := d.Hooks["PreToolUse"][0].Hooks[0]
	if h.Command != UserHookProgram(exe) || !slices.Equal(h.Args, []string{"--per-user"}) || h.OnFailure != "block" {
		t.Errorf("hook %+v: want the per-user hook program beside %s, in exec form, onFailure block", h, exe)
	}
	if d.AllowManagedHooksOnly || d.AllowedMcpServers != nil {
		t.Error("lockdown controls without lockdown")
	}
}

func TestUnderLockdownOnlyManagedHooksRunAndSettingsChangesAreJudged(t *testing.T) {
	cfg := managedconfig.Config{Lockdown: true, RequiredMinimumVersion: "2.1.329"}
	cfg.Policy.RestrictMCPServers, cfg.Policy.AllowedMCPServers = true, []string{"github"}
	data, err := Content(Hook{Exe: exe}, cfg, schema(t))
	if err != nil {
		t.Fatal(err)
	}
	d := parse(t, data)
	if !d.AllowManagedHooksOnly {
		t.Error("no allowManagedHooksOnly")
	}
	if cc := d.Hooks["ConfigChange"]; len(cc) != 1 || cc[0].Hooks[0].Command != UserHookProgram(exe) || cc[0].Hooks[0].OnFailure != "block" {
		t.Errorf("ConfigChange hook %+v", cc)
	}
	var names []string
	for _, s := range d.AllowedMcpServers {
		names = append(names, s["serverName"])
	}
	if !slices.Equal(names, []string{"github", "workspace"}) {
		t.Errorf("allowedMcpServers %v: want the policy's and Cowork's own", names)
	}
	if d.RequiredMinimumVersion != "2.1.329" {
		t.Errorf("requiredMinimumVersion %q", d.RequiredMinimumVersion)
	}
	if d.Env["CLAUDE_CODE_SHELL_PREFIX"] != "" || len(d.Env) != len(PinnedEnv) {
		t.Errorf("env %v: want the pinned variables set empty", d.Env)
	}
	if !d.AllowManagedMcpServersOnly || !d.DisableSkillShellExecution {
		t.Errorf("allowManagedMcpServersOnly %v, disableSkillShellExecution %v: want both", d.AllowManagedMcpServersOnly, d.DisableSkillShellExecution)
	}
}

// forceRemoteSettingsRefresh is the admin's choice, made under lockdown: it stops every CLI that
// cannot fetch the organisation's settings, so it is never written unasked.
func TestTheDropInForcesAFreshFetchOfServerSettingsOnlyWhenAsked(t *testing.T) {
	for _, cfg := range []managedconfig.Config{{}, {Lockdown: true}, {Lockdown: true, ForceRemoteSettingsRefresh: true}} {
		data, err := Content(Hook{Exe: exe}, cfg, schema(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := parse(t, data).ForceRemoteSettingsRefresh; got != cfg.ForceRemoteSettingsRefresh {
			t.Errorf("%+v: forceRemoteSettingsRefresh %v", cfg, got)
		}
	}
}

// A server the admin named with what it starts is named so to Claude Code: a server the agent
// makes under the same name starts nothing.
func TestUnderLockdownAServerIsNamedByItsCommandOrURL(t *testing.T) {
	cfg := managedconfig.Config{Lockdown: true}
	cfg.Policy.RestrictMCPServers = true
	cfg.Policy.MCPServers = []managedconfig.MCPServer{
		{Name: "github", Command: []string{"npx", "-y", "server-github"}},
		{Name: "linear", URL: "https://mcp.linear.app/*"},
	}
	data, err := Content(Hook{Exe: exe}, cfg, schema(t))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AllowedMcpServers []map[string]any `json:"allowedMcpServers"`
	}
	json.Unmarshal(data, &doc)
	got, _ := json.Marshal(doc.AllowedMcpServers)
	want := `[{"serverCommand":["npx","-y","server-github"]},{"serverUrl":"https://mcp.linear.app/*"},{"serverName":"workspace"}]`
	if string(got) != want {
		t.Errorf("allowedMcpServers %s, want %s", got, want)
	}
}

func TestADropInNamingARelativeBinaryIsRefused(t *testing.T) {
	if _, err := Content(Hook{Exe: "coworkbridge"}, managedconfig.Config{}, schema(t)); err == nil {
		t.Error("a relative binary was accepted")
	}
}

func TestCheckFindsAMissingAlteredOrUnsafeDropIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "managed-settings.d")
	want, err := Content(Hook{Exe: exe}, managedconfig.Config{}, schema(t))
	if err != nil {
		t.Fatal(err)
	}
	if probs := Check(dir, want); len(probs) != 1 || !errors.Is(probs[0], ErrMissing) {
		t.Fatalf("missing: %v", probs)
	}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, Name)
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if os.Geteuid() == 0 {
		if probs := Check(dir, want); probs != nil {
			t.Fatalf("a fresh drop-in has problems: %v", probs)
		}
	}
	os.Chmod(path, 0o666)
	if probs := Check(dir, want); !hasErr(probs, ErrUnsafe) {
		t.Errorf("world-writable not found: %v", probs)
	}
	os.Chmod(path, 0o644)
	os.WriteFile(path, []byte(`{"hooks":{}}`), 0o644)
	if probs := Check(dir, want); !hasErr(probs, ErrAltered) {
		t.Errorf("altered not found: %v", probs)
	}
	if os.Geteuid() == 0 {
		os.Chown(path, 1000, 1000)
		if probs := Check(dir, want); !hasErr(probs, ErrUnsafe) {
			t.Errorf("a drop-in owned by a user not found: %v", probs)
		}
	}
}

func hasErr(errs []error, target error) bool {
	return slices.ContainsFunc(errs, func(e error) bool { return errors.Is(e, target) })
}

// A sibling drop-in the CLI merges with ours, or the managed file above, that switches hooks off,
// undoes a lockdown switch, adds hooks, env or programs, or widens the MCP list, is reported; one
// that only sets harmless keys is not.
func TestCheckReportsASiblingThatWeakensOurs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "managed-settings.d")
	want, err := Content(Hook{Exe: exe}, managedconfig.Config{Lockdown: true}, schema(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, content string
		weakens       bool
	}{
		{"99-zz.json", `{"disableAllHooks": true}`, true},
		{"10-a.json", `{"allowManagedHooksOnly": false}`, true},
		{"60-b.json", `{"hooks": {"PreToolUse": []}}`, true},
		{"70-c.json", `{"env": {"CLAUDE_CODE_SHELL_PREFIX": "x"}}`, true},
		{"80-d.json", `{"allowedMcpServers": [{"serverName": "x"}]}`, true},
		{"../managed-settings.json", `{"apiKeyHelper": "sh"}`, true},
		{"20-ok.json", `{"model": "opus", "allowManagedHooksOnly": true, "disableAllHooks": false}`, false},
		{"notes.txt", `{"disableAllHooks": true}`, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join(dir, tc.file)
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(p)
			probs := Check(dir, want)
			if hasErr(probs, ErrWeakened) != tc.weakens {
				t.Errorf("reported weakened: %v, want %v (%v)", hasErr(probs, ErrWeakened), tc.weakens, probs)
			}
		})
	}
}

// Install takes a folder others could write (one a user made before the admin's first install)
// for root, and Check says when it is not.
func TestWriteTakesTheFolderForRootAndCheckReportsAWritableOne(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a folder root's needs root")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "managed-settings.d")
	os.MkdirAll(dir, 0o777)
	os.Chmod(dir, 0o777)
	os.Chown(dir, 1000, 1000)
	want, _ := Content(Hook{Exe: exe}, managedconfig.Config{}, schema(t))
	if err := Write(dir, want); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(dir)
	if fi.Mode().Perm()&0o022 != 0 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the folder is %v, uid %d after install", fi.Mode().Perm(), fi.Sys().(*syscall.Stat_t).Uid)
	}
	if probs := Check(dir, want); probs != nil {
		t.Fatalf("installed: %v", probs)
	}
	os.Chmod(dir, 0o777)
	if probs := Check(dir, want); !hasErr(probs, ErrUnsafe) {
		t.Errorf("a folder anyone can write: %v", probs)
	}
}

// A drop-in is only as good as the program it runs: one missing, not a file or not executable
// would have every call blocked, and is named as such.
func TestCheckProgramNamesAHookProgramThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "coworkbridge")
	for _, tc := range []struct {
		name  string
		make  func(path string)
		fails bool
	}{
		{"missing", func(string) {}, true},
		{"not executable", func(p string) { os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644) }, true},
		{"a folder", func(p string) { os.Mkdir(p, 0o755) }, true},
		{"installed", func(p string) { os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, h := range []Hook{{Exe: bin}, {Exe: bin, System: true}} {
				os.RemoveAll(h.Program())
				tc.make(h.Program())
				err := CheckProgram(h)
				if (err != nil) != tc.fails || err != nil && !strings.Contains(err.Error(), "block every tool call") {
					t.Errorf("%s: %v", h.Program(), err)
				}
			}
		})
	}
}
