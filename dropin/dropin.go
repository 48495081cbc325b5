// Package dropin is coworkbridge's Claude Code managed-settings drop-in: the file, read by every
// Claude Code on the machine whatever its session's settings say, that runs coworkbridge's host
// hook program before each tool call. It builds the drop-in for a configuration (and, under the
// admin's lockdown, the controls only managed settings have), checks it against the settings
// schema, writes it as root, and checks the one installed. The same content is what an
// organisation's console settings must carry (Console, CheckConsole): where those reach a CLI,
// the drop-in is not used.
//
// It does not decide whether to install (the installer does), and never writes anything else: a
// managed file the CLI cannot read stops every Claude Code session on the machine, so nothing
// reaches the folder that did not pass the schema.
package dropin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/renameio/v2"

	"github.com/coworkbridge/coworkbridge/claudehook"
	"github.com/coworkbridge/coworkbridge/managedconfig"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// Name is our drop-in's file name; 50 leaves room on both sides for other tools'.
const Name = "50-coworkbridge.json"

// Dir is the managed-settings drop-in folder Claude Code reads on goos.
func Dir(goos string) string {
	if goos == "darwin" {
		return "/Library/Application Support/ClaudeCode/managed-settings.d"
	}
	return "/etc/claude-code/managed-settings.d"
}

// Timeout is generous: the host hook answers in milliseconds, and with onFailure "block" a hook
// that runs past it blocks the call rather than letting it through.
const Timeout = 30 * time.Second

// CoworkServers are the MCP servers Cowork itself gives the CLI (the host loop's shell and web
// fetch): a managed allow-list that left them out would stop every session's shell.
var CoworkServers = []string{"workspace"}

// Hook is the program the drop-in runs.
type Hook struct {
	// Exe is coworkbridge's binary, by an absolute path. The drop-in runs the hook program
	// installed beside it (Program).
	Exe string
	// System: the hook hands each call to the system-mode daemon: HookProgram, which leaves what
	// it cannot do to `coworkbridge hook --system`. Otherwise the hook judges the call in its
	// own process: UserHookProgram.
	System bool
}

// HookProgram is system mode's hook program, installed beside coworkbridge's binary exe.
func HookProgram(exe string) string {
	return filepath.Join(filepath.Dir(exe), managedconfig.HookProgramName)
}

// UserHookProgram is per-user mode's hook program, installed beside coworkbridge's binary exe:
// `coworkbridge hook` alone, a smaller process to start on every tool call.
func UserHookProgram(exe string) string {
	return filepath.Join(filepath.Dir(exe), managedconfig.UserHookProgramName)
}

// Program is the hook program the drop-in runs; the installer refuses to write a drop-in
// naming one that is not there.
func (h Hook) Program() string {
	program, _ := h.command()
	return program
}

// CheckProgram says what keeps the hook program h names from running: missing, or not an
// executable file. A drop-in whose program cannot run blocks every tool call of every Claude Code
// session on the machine (the hook fails, and fails closed), and nothing else would say why.
func CheckProgram(h Hook) error {
	program := h.Program()
	fi, err := os.Stat(program)
	switch {
	case err != nil:
		return fmt.Errorf("the drop-in's hook program cannot be run, so it would block every tool call on this machine (%w): install the whole package", err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("the drop-in's hook program %s is not an executable file (%v), so it would block every tool call on this machine: install the whole package", program, fi.Mode())
	}
	return nil
}

// command is the drop-in's program and its arguments: always one, so that the CLI runs it in
// exec form (no shell), which it does when "args" is present.
func (h Hook) command() (string, []string) {
	if h.System {
		return HookProgram(h.Exe), []string{"--system"}
	}
	return UserHookProgram(h.Exe), []string{"--per-user"}
}

// Content is the drop-in for cfg, running exe: the PreToolUse hook in exec form (no shell), and
// with cfg.Lockdown also allowManagedHooksOnly, a ConfigChange hook, and the policy's MCP
// allow-list; requiredMinimumVersion when cfg names one. It is checked against the settings
// schema: an error means nothing may be written.
func Content(h Hook, cfg managedconfig.Config, sc *settingsschema.Schema) ([]byte, error) {
	if !filepath.IsAbs(h.Exe) {
		return nil, fmt.Errorf("the drop-in must name coworkbridge by an absolute path, not %q", h.Exe)
	}
	exe, args := h.command()
	hooks := map[string][]claudehook.HookGroup{
		"PreToolUse": {claudehook.ExecGroup("*", exe, args, Timeout)},
	}
	doc := map[string]any{"hooks": hooks}
	if cfg.Lockdown {
		hooks["ConfigChange"] = []claudehook.HookGroup{claudehook.ExecGroup("", exe, args, Timeout)}
		doc["allowManagedHooksOnly"] = true
		// Skills' inline !`cmd` run on the Mac in a session opened on a user's folder, which
		// no session hook sees (verified with CLI 2.1.332).
		doc["disableSkillShellExecution"] = true
		// Managed env wins over a project's: these variables, set in the settings of a user's
		// own folder, would start a program at every shell call after the hooks judged it
		// (verified with CLI 2.1.332; empty means unset to both the CLI and bash).
		doc["env"] = PinnedEnv
		if cfg.ForceRemoteSettingsRefresh {
			// A cached copy of the organisation's server-managed settings (remote-settings.json)
			// takes the managed tier from this drop-in when a fetch fails; with this key such a
			// CLI refuses to start instead (verified with CLI 2.1.332: docs/CLAUDE-CODE-FACTS.md).
			doc["forceRemoteSettingsRefresh"] = true
		}
		if cfg.Policy.RestrictMCPServers {
			doc["allowedMcpServers"] = mcpList(cfg.Policy.Servers())
			// Only this list counts: a user or project allowedMcpServers cannot widen it.
			doc["allowManagedMcpServersOnly"] = true
		}
	}
	if cfg.RequiredMinimumVersion != "" {
		doc["requiredMinimumVersion"] = cfg.RequiredMinimumVersion
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode the drop-in: %w", err)
	}
	if err := sc.Check(b.Bytes()); err != nil {
		return nil, fmt.Errorf("the drop-in fails Claude Code's settings schema, so it was not written (report this to the coworkbridge maintainers): %w", err)
	}
	return b.Bytes(), nil
}

// PinnedEnv are the variables lockdown's drop-in sets empty, so that no settings file can set them.
var PinnedEnv = map[string]string{"CLAUDE_CODE_SHELL_PREFIX": "", "BASH_ENV": ""}

// mcpList is Claude Code's allowedMcpServers for the admin's servers and Cowork's own: each by
// what it starts where the admin said (an entry by name admits any command under that name,
// which the agent can give its own server: verified with CLI 2.1.332), by name otherwise.
func mcpList(servers []managedconfig.MCPServer) []map[string]any {
	var list []map[string]any
	named := map[string]bool{}
	for _, s := range servers {
		switch {
		case len(s.Command) > 0:
			list = append(list, map[string]any{"serverCommand": s.Command})
		case s.URL != "":
			list = append(list, map[string]any{"serverUrl": s.URL})
		case !named[s.Name]:
			named[s.Name] = true
			list = append(list, map[string]any{"serverName": s.Name})
		}
	}
	for _, n := range CoworkServers {
		if !named[n] {
			list = append(list, map[string]any{"serverName": n})
		}
	}
	return list
}

// Write puts data at dir/Name atomically, mode 0644, owned by root when run as root: Claude
// Code accepts a world-writable managed file silently, and one an agent could write would be no
// guard.
func Write(dir string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s (needs root): %w", dir, err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := secureFolder(d); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, Name)
	t, err := renameio.TempFile(dir, path)
	if err != nil {
		return fmt.Errorf("write %s (needs root): %w", path, err)
	}
	defer t.Cleanup()
	if err := t.Chmod(0o644); err != nil {
		return fmt.Errorf("set the mode of %s: %w", path, err)
	}
	if os.Geteuid() == 0 {
		if err := t.Chown(0, 0); err != nil {
			return fmt.Errorf("give %s to root: %w", path, err)
		}
	}
	if _, err := t.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := t.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Problems that Check finds.
var (
	ErrMissing = errors.New("the managed-settings drop-in is not installed")
	ErrAltered = errors.New("the installed managed-settings drop-in is not what this configuration asks for")
	ErrUnsafe  = errors.New("the installed managed-settings drop-in could be changed by someone other than root")
)

// maxInstalled bounds what Check reads.
const maxInstalled = 1 << 20

// Check compares the drop-in installed in dir with want, and its owner and mode (and those of its
// folder and the folder above) with what Write gives them; it also reads every other managed
// file the CLI merges with ours and reports each that weakens it (ErrWeakened). It returns nil when all is as it should be, or every problem found (each wrapping
// one of the errors above).
func Check(dir string, want []byte) []error {
	path := filepath.Join(dir, Name)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []error{fmt.Errorf("%w at %s", ErrMissing, path)}
	}
	if err != nil {
		return []error{fmt.Errorf("%w: %v", ErrMissing, err)}
	}
	var probs []error
	if !fi.Mode().IsRegular() {
		return []error{fmt.Errorf("%w: %s is not a plain file (%v)", ErrUnsafe, path, fi.Mode().Type())}
	}
	if fi.Mode().Perm()&0o022 != 0 {
		probs = append(probs, fmt.Errorf("%w: %s has mode %v", ErrUnsafe, path, fi.Mode().Perm()))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		probs = append(probs, fmt.Errorf("%w: %s is owned by uid %d", ErrUnsafe, path, st.Uid))
	}
	if fi.Size() > maxInstalled {
		return append(probs, fmt.Errorf("%w: %s is %d bytes", ErrAltered, path, fi.Size()))
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return append(probs, fmt.Errorf("%w: %v", ErrMissing, err))
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
		probs = append(probs, fmt.Errorf("%w (%s); run `sudo coworkbridge install --managed-settings` again", ErrAltered, path))
	}
	probs = append(probs, checkFolders(dir)...)
	return append(probs, checkSiblings(dir)...)
}
