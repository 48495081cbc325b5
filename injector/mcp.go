package injector

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/coworkbridge/coworkbridge/allowlist"
	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/session"
)

// The other files a session's CLI reads MCP server definitions from, each able to make it start a
// program: the project's outputs/.mcp.json (cwd is outputs/), and the CLI's own state file in
// CLAUDE_CONFIG_DIR (the session's .claude), whose mcpServers are the user scope and whose
// projects.<path>.mcpServers the local scope. The agent writes both folders.
const (
	ProjectMCPFile = "outputs/.mcp.json"
	StateFile      = session.ClaudeDir + "/.claude.json"
)

// maxStateBytes bounds what is read of the CLI's state file, which grows with its history; one
// larger is moved aside whole (the CLI starts a new one), so padding cannot hide a server.
const maxStateBytes = 16 << 20

// guardMCP holds the MCP server definitions of the session's .mcp.json and the CLI's state file
// to the allow-list. It returns what it took out ("outputs/.mcp.json: held mcpServers.x"), the
// part of it that is an attempt, and an error only when something could not be undone.
//
// The CLI rewrites its state file on its own at times; a write of ours that lands between its
// read and its rename would lose one of its updates (counters, recent projects), never a
// setting. That happens only when a server was planted, which no Cowork session does otherwise.
func guardMCP(s *session.Session, l allowlist.List, now time.Time) (found, attempts []string, err error) {
	for _, f := range []struct {
		name     string
		projects bool // also the local scope under projects.*
	}{{ProjectMCPFile, false}, {StateFile, true}} {
		fd, at, ferr := guardMCPFile(s, f.name, f.projects, l, now)
		found, attempts = append(found, fd...), append(attempts, at...)
		if ferr != nil && err == nil {
			err = ferr
		}
	}
	return found, attempts, err
}

func guardMCPFile(s *session.Session, name string, projects bool, l allowlist.List, now time.Time) (found, attempts []string, err error) {
	fi, err := s.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("examine %s: %w", name, err)
	case fi.IsDir():
		return nil, nil, nil // the CLI reads no servers from a folder
	case !fi.Mode().IsRegular():
		// A link the CLI would follow to definitions we cannot see.
		if err := s.Remove(name); err != nil {
			return nil, []string{name + " is a link or special file"}, fmt.Errorf("remove %s: %w", name, err)
		}
		msg := name + " was a link or special file (removed)"
		return []string{msg}, []string{msg}, nil
	case fi.Size() > maxStateBytes:
		aside := asideName(name, now)
		if err := s.MoveAside(name, aside); err != nil {
			return nil, nil, fmt.Errorf("move aside the oversized %s: %w", name, err)
		}
		return []string{name + " was too large to judge (moved aside as " + aside + ")"}, nil, nil
	}
	data, err := s.ReadFile(name, maxStateBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	out, held, set, err := hookentry.HoldServers(data, projects, l)
	if err != nil || len(held) == 0 {
		return nil, nil, nil // the CLI starts no server from a file it cannot parse
	}
	for _, n := range held {
		found = append(found, name+": held "+n)
	}
	for _, n := range set {
		attempts = append(attempts, name+" set "+n)
	}
	err = putHeld(s, name, data, out, fi.Mode().Perm(), now)
	if errors.Is(err, errAside) {
		return found, attempts, err
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return found, attempts, fmt.Errorf("write %s: %w", name, err)
	}
	return found, attempts, nil
}
