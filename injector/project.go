package injector

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
)

// Claude Code also reads project settings from the folder it runs in: Cowork's cwd is the
// session's outputs/, which the agent writes freely. We put no hook there (the user level
// carries ours); we only take out what would switch hooks off or hijack them, and report it: no
// one but the agent writes there, so each finding is an attempt on the guard.
const projectClaudeDir = "outputs/.claude"

var projectSettings = []string{projectClaudeDir + "/settings.json", projectClaudeDir + "/settings.local.json"}

// dangerousEnv are environment keys that settings can give to hooks and that would let the
// session choose what a hook runs or where it looks: the hook runs under env -i, but the shell
// Claude Code starts it with reads some of these before the hook's first line.
var dangerousEnv = map[string]bool{
	"PATH": true, "IFS": true, "ENV": true, "BASH_ENV": true, "SHELLOPTS": true, "BASHOPTS": true, "PS4": true,
	"CDPATH": true, "GLOBIGNORE": true, "PROMPT_COMMAND": true, "ZDOTDIR": true, "HOME": true, "SHELL": true,
	"CLAUDE_CONFIG_DIR": true, "CLAUDE_PROJECT_DIR": true, "CLAUDE_CODE_SHELL_PREFIX": true, "CLAUDE_CODE_SHELL": true,
	"TMPDIR": true, "GCONV_PATH": true, "LOCPATH": true, "NLSPATH": true, "HOSTALIASES": true, "RESOLV_HOST_CONF": true,
}

// dangerousEnvKey reports whether settings must not hand key to hooks.
func dangerousEnvKey(k string) bool {
	u := strings.ToUpper(k)
	return dangerousEnv[u] || strings.HasPrefix(u, "LD_") || strings.HasPrefix(u, "DYLD_") ||
		strings.HasPrefix(u, "BASH_FUNC_") || strings.Contains(k, "%%")
}

// neutralise removes disableAllHooks and the dangerous env keys from a settings object, keeping
// everything else as it was. It returns what it removed.
func neutralise(top *object) []string {
	var removed []string
	if v, ok := top.get("disableAllHooks"); ok && !bytesEqualTrim(v, "false") {
		top.del("disableAllHooks")
		removed = append(removed, "disableAllHooks")
	}
	if v, ok := top.get("env"); ok {
		env, err := parseObject(v)
		if err != nil {
			return removed
		}
		var gone []string
		for _, k := range env.keys {
			if dangerousEnvKey(k) {
				gone = append(gone, k)
			}
		}
		for _, k := range gone {
			env.del(k)
			removed = append(removed, "env "+k)
		}
		if len(gone) > 0 {
			top.set("env", env.encode())
		}
	}
	return removed
}

func bytesEqualTrim(v []byte, s string) bool { return strings.TrimSpace(string(v)) == s }

// guardProject neutralises the project-level settings of a session (outputs/.claude). It returns
// the attempts it found and undid; an error only when one could not be undone.
func guardProject(s *session.Session, now time.Time) ([]string, error) {
	var found []string
	fi, err := s.Lstat(projectClaudeDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("examine %s: %w", projectClaudeDir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		// Claude Code would follow it to settings we cannot see; the link itself is the agent's.
		if err := s.Remove(projectClaudeDir); err != nil {
			return []string{projectClaudeDir + " is a link"}, fmt.Errorf("remove link %s: %w", projectClaudeDir, err)
		}
		return []string{projectClaudeDir + " was a link (removed)"}, nil
	case !fi.IsDir():
		return nil, nil
	}
	var first error
	for _, name := range projectSettings {
		f, err := guardProjectFile(s, name, now)
		found = append(found, f...)
		if err != nil && first == nil {
			first = err
		}
	}
	return found, first
}

func guardProjectFile(s *session.Session, name string, now time.Time) ([]string, error) {
	fi, err := s.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("examine %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, nil // Claude Code reads no settings from a folder
		}
		if err := s.Remove(name); err != nil {
			return []string{name + " is not a plain file"}, fmt.Errorf("remove %s: %w", name, err)
		}
		return []string{name + " was a link or special file (removed)"}, nil
	}
	data, err := s.ReadFile(name, maxSettingsBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, nil // Claude Code ignores a file it cannot parse
	}
	removed := neutralise(top)
	if len(removed) == 0 {
		return nil, nil
	}
	if _, err := setAside(s, name, data, now); err != nil {
		return nil, err
	}
	out, err := indent(top.encode())
	if err == nil {
		err = s.WriteFile(name, out, fi.Mode().Perm())
	}
	found := make([]string, len(removed))
	for i, r := range removed {
		found[i] = name + ": " + r
	}
	if err != nil {
		return found, fmt.Errorf("write %s: %w", name, err)
	}
	return found, nil
}
