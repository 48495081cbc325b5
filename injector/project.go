package injector

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/session"
)

// Claude Code also reads project settings from the folder it runs in: Cowork's cwd is the
// session's outputs/, which the agent writes freely. We put no hook there (the user level
// carries ours); the files are held to the same allow-list as the user level, PreToolUse hooks
// included, and what is taken out is reported: no one but the agent writes there.
const projectClaudeDir = "outputs/.claude"

var projectSettings = []string{projectClaudeDir + "/settings.json", projectClaudeDir + "/settings.local.json"}

// guardProject holds the project-level settings of a session (outputs/.claude). It returns
// the attempts it found and undid; an error only when one could not be undone.
func guardProject(s *session.Session, l allowlist.List, now time.Time) ([]string, error) {
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
		f, err := guardProjectFile(s, name, l, now)
		found = append(found, f...)
		if err != nil && first == nil {
			first = err
		}
	}
	return found, first
}

func guardProjectFile(s *session.Session, name string, l allowlist.List, now time.Time) ([]string, error) {
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
	out, removed, err := hookentry.HoldProject(data, l)
	if err != nil || len(removed) == 0 {
		return nil, nil // Claude Code ignores a file it cannot parse
	}
	err = putHeld(s, name, data, out, fi.Mode().Perm(), now)
	if errors.Is(err, errAside) {
		return nil, err
	}
	found := make([]string, len(removed))
	for i, r := range removed {
		found[i] = name + ": held " + r
	}
	if err != nil {
		return found, fmt.Errorf("write %s: %w", name, err)
	}
	return found, nil
}

// errAside marks a failure to keep the original aside, before anything was changed.
var errAside = errors.New("original not kept aside")

// putHeld keeps a copy of data, a session file as read, and puts out (what the allow-list left
// of it) in its place. The swap never brings back a file removed meanwhile (fs.ErrNotExist then).
func putHeld(s *session.Session, name string, data, out []byte, perm fs.FileMode, now time.Time) error {
	if _, err := setAside(s, name, data, now); err != nil {
		return fmt.Errorf("%w: %w", errAside, err)
	}
	return s.Replace(name, out, perm)
}

// mcpFileName is the file a CLI reads project MCP servers from, in the folder it starts in.
const mcpFileName = ".mcp.json"

// files lists the settings and MCP files of nc that exist or may appear.
func (nc nestedConfig) files() []string {
	names := slices.Clone(nc.mcp)
	for _, level := range nc.levels {
		names = append(names, level+"/settings.json", level+"/settings.local.json")
	}
	return names
}

// guardNested holds the settings and MCP servers of the configuration nested below outputs/ to
// the allow-list, as the project level's are, and removes links standing at their names. No CLI
// of the session loads them: its own reads only skills from there (guardSurface holds those), and
// a nested CLI started in such a folder is refused by the classifier. They are held because a
// program-starting key with no managed switch (apiKeyHelper, a status line, hooks) must not wait
// in the session for a CLI the classifier did not recognise; finding one is a repair, not an
// attempt on the guard: a project the agent unpacks or clones may carry its own.
func guardNested(s *session.Session, nc nestedConfig, l allowlist.List, now time.Time) ([]string, error) {
	var found []string
	var first error
	keep := func(f []string, err error) {
		found = append(found, f...)
		if err != nil && first == nil {
			first = err
		}
	}
	for _, name := range nc.links {
		if err := s.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			keep(nil, fmt.Errorf("remove link %s: %w", name, err))
			continue
		}
		keep([]string{name + " was a link (removed)"}, nil)
	}
	for _, level := range nc.levels {
		for _, name := range []string{level + "/settings.json", level + "/settings.local.json"} {
			keep(guardProjectFile(s, name, l, now))
		}
	}
	for _, name := range nc.mcp {
		f, _, err := guardMCPFile(s, name, false, l, now)
		keep(f, err)
	}
	return found, first
}
