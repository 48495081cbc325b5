package injector

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/coworkbridge/coworkbridge/hookentry"
	"github.com/coworkbridge/coworkbridge/session"
	"github.com/coworkbridge/coworkbridge/settingsschema"
)

// maxSettingsBytes bounds how much of a settings.json is read; Claude Code's own files are a few
// kilobytes.
const maxSettingsBytes = 4 << 20

// Outcome is what one Ensure did to a session.
type Outcome struct {
	// Wrote is set when settings.json was written.
	Wrote bool
	Merge hookentry.MergeResult
	// SetAside names the copy kept of a file that could not be merged as it was.
	SetAside string
	// ReplacedLink: settings.json was a symbolic link (which Claude Code would follow) and has been
	// replaced by a real file.
	ReplacedLink bool
	// Replaced names what stood where settings.json must be (a FIFO, a folder, a file too large)
	// and was removed or moved aside.
	Replaced string
	// Invalid lists top-level keys left out because their values fail the CLI's settings schema
	// (the CLI would ignore the whole file, our hook with it); the original is kept aside.
	Invalid []string
	// Project lists attempts found and undone in the project-level settings (see guardProject).
	Project []string
	// MCP lists what was held of the MCP servers in .mcp.json and the CLI's state file, and
	// MCPAttempts the part of it only an attempt explains (see guardMCP).
	MCP, MCPAttempts []string
	// Surface lists what was held of the configuration beyond settings (skills, agents, commands,
	// output styles, plugins and the like), and SurfaceAttempts the part of it that can start
	// something (see guardSurface).
	Surface, SurfaceAttempts []string
	// Nested lists what was held of the settings and MCP servers in folders below outputs/ (see
	// guardNested): repairs, never attempts.
	Nested []string
	// Running: the session's CLI had already started (it has a transcript folder), so a hook written
	// for the first time now is unverified until an event arrives.
	Running bool
}

// Repairs lists, for logs and health, what Ensure had to undo.
func (o Outcome) Repairs() []string {
	var r []string
	for _, k := range o.Merge.Held {
		r = append(r, "held "+k)
	}
	r = append(r, o.Project...)
	r = append(r, o.MCP...)
	r = append(r, o.Surface...)
	r = append(r, o.Nested...)
	if o.Replaced != "" {
		r = append(r, "replaced a "+o.Replaced+" at settings.json")
	}
	if len(o.Invalid) > 0 {
		r = append(r, "left out values the settings schema rejects: "+strings.Join(o.Invalid, ", "))
	}
	if o.Merge.Removed > 0 {
		r = append(r, fmt.Sprintf("replaced %d stale or duplicate entries", o.Merge.Removed))
	}
	if o.ReplacedLink {
		r = append(r, "replaced a symbolic link")
	}
	if o.SetAside != "" {
		r = append(r, "set aside an unusable settings.json as "+o.SetAside)
	}
	return r
}

// quiet reports whether nothing was changed, undone or found: the settings were as they should be.
func (o Outcome) quiet() bool {
	return !o.Wrote && !o.Merge.Added && len(o.Repairs()) == 0 && len(o.Tampering()) == 0
}

// repairNames are the entries a repair reads or looks at.
func repairNames() []string {
	return append([]string{session.ClaudeDir, session.BridgeDir, session.DecisionsDir, session.SettingsFile,
		session.ClaudeDir + "/projects", projectClaudeDir, ProjectMCPFile, StateFile}, projectSettings...)
}

// repairInputs stamps what a repair reads, in repairNames' order. Of a folder only its identity
// counts: a repair looks at what it is, not at what comes and goes in it.
func repairInputs(s *session.Session) []session.Stamp {
	st := s.Stamps(repairNames()...)
	for i := range st {
		if st[i].Mode.IsDir() {
			st[i] = session.Stamp{Dev: st[i].Dev, Ino: st[i].Ino, Mode: st[i].Mode}
		}
	}
	return append(st, surfaceStamps(s)...)
}

// Tampering lists what Ensure undid that only an attempt on the guard explains: nothing but the
// agent sets disableAllHooks, a status line or a PATH for hooks in a Cowork session. Keys held only
// because the safe list does not know them are repairs, not attempts.
func (o Outcome) Tampering() []string {
	var r []string
	for _, k := range o.Merge.Attempts {
		r = append(r, "settings set "+k)
	}
	if o.Replaced != "" {
		r = append(r, "a "+o.Replaced+" stood at settings.json")
	}
	r = append(r, o.MCPAttempts...)
	r = append(r, o.SurfaceAttempts...)
	return append(r, o.Project...)
}

// Ensure makes the session's settings.json carry exactly our current entry, in a file Claude Code
// accepts, and creates our folder so the hook need not. It writes only when something changed.
// sc, when not nil, checks the result against the CLI's settings schema: foreign values that would
// make the CLI ignore the whole file (our hook with it) are kept aside and left out.
func Ensure(s *session.Session, e hookentry.Entry, sc *settingsschema.Schema, now time.Time) (Outcome, error) {
	return ensure(s, e, sc, now, true)
}

// ErrVanished: Repair found settings.json or our folder gone, and creates neither.
var ErrVanished = errors.New("gone from the session (being removed?)")

// Repair is Ensure for a session hooked before: settings.json or our folder found gone is not
// created again but reported as ErrVanished, since a removal of the session may be under way.
// Reading and writing are one step here, so no removal can slip between a check and the write.
func Repair(s *session.Session, e hookentry.Entry, sc *settingsschema.Schema, now time.Time) (Outcome, error) {
	return ensure(s, e, sc, now, false)
}

func ensure(s *session.Session, e hookentry.Entry, sc *settingsschema.Schema, now time.Time, create bool) (Outcome, error) {
	var out Outcome
	// .claude is Cowork's to create: making it here could resurrect a session being deleted.
	if fi, err := s.Lstat(session.ClaudeDir); err != nil || !fi.IsDir() {
		if err == nil {
			err = session.ErrNotDir
		}
		return out, fmt.Errorf("examine %s: %w", session.ClaudeDir, err)
	}
	if !create {
		// A repair creates nothing: the folders must be there, and be folders.
		for _, name := range []string{session.BridgeDir, session.DecisionsDir} {
			fi, err := s.Lstat(name)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return out, fmt.Errorf("%s: %w", name, ErrVanished)
			case err != nil:
				return out, fmt.Errorf("prepare %s: %w", session.BridgeDir, err)
			case !fi.IsDir():
				return out, fmt.Errorf("prepare %s: %s is a %s: %w", session.BridgeDir, name, kindOf(fi), session.ErrNotDir)
			}
		}
	} else if err := s.MkdirAll(session.DecisionsDir, 0o700); err != nil {
		return out, fmt.Errorf("prepare %s: %w", session.BridgeDir, err)
	}
	if _, err := s.Lstat(session.ClaudeDir + "/projects"); err == nil {
		out.Running = true
	}
	project, perr := guardProject(s, e.Allowed, now)
	out.Project = project
	if perr != nil {
		return out, perr
	}
	var merr error
	if out.MCP, out.MCPAttempts, merr = guardMCP(s, e.Allowed, now); merr != nil {
		return out, merr
	}
	nc := findNested(s)
	if out.Nested, merr = guardNested(s, nc, e.Allowed, now); merr != nil {
		return out, merr
	}
	if out.Surface, out.SurfaceAttempts, merr = guardSurface(s, e.Allowed, now, nc.levels); merr != nil {
		return out, merr
	}
	data, perm, err := readSettings(s, &out, now)
	if err != nil {
		return out, err
	}
	if data == nil && !create && !out.ReplacedLink && out.Replaced == "" && out.SetAside == "" {
		return out, fmt.Errorf("%s: %w", session.SettingsFile, ErrVanished)
	}
	merged, res, err := hookentry.Merge(data, e)
	unparseable := errors.Is(err, hookentry.ErrNotObject)
	if unparseable { // nothing in it can be kept in place: start from our entry alone
		merged, res, err = hookentry.Merge(nil, e)
	}
	if err != nil {
		return out, fmt.Errorf("merge %s: %w", session.SettingsFile, err)
	}
	if sc != nil {
		if merged, out.Invalid, err = hookentry.Conform(sc, merged, e); err != nil {
			return out, err
		}
		if len(out.Invalid) > 0 {
			res.Changed = true
		}
	}
	if (unparseable || len(res.Damaged) > 0 || len(out.Invalid) > 0 || len(res.Held) > 0) && out.SetAside == "" && data != nil {
		// A copy first, then the atomic replace: settings.json is never missing in between.
		if out.SetAside, err = setAside(s, session.SettingsFile, data, now); err != nil {
			return out, err
		}
	}
	out.Merge = res
	if !res.Changed && !out.ReplacedLink && out.Replaced == "" {
		return out, nil
	}
	if err := writeSettings(s, merged, perm, data != nil); err != nil {
		return out, err
	}
	out.Wrote = true
	return out, nil
}

// writeSettings puts merged in place. A file that was read is swapped with the new content
// (Session.Replace), never created again: if it is gone meanwhile, a removal is under way and the
// result is ErrVanished, so a repair can go ahead at once whatever removals run in the session.
func writeSettings(s *session.Session, merged []byte, perm fs.FileMode, existed bool) error {
	if !existed {
		if err := s.WriteFile(session.SettingsFile, merged, perm); err != nil {
			return fmt.Errorf("write %s: %w", session.SettingsFile, err)
		}
		return nil
	}
	err := s.Replace(session.SettingsFile, merged, perm)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", session.SettingsFile, ErrVanished)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", session.SettingsFile, err)
	}
	return nil
}

// readSettings returns the current content (nil when absent) and the mode to write with. A
// symbolic link is removed, never followed: its target is not ours to read or change. A FIFO,
// device or socket is removed without being opened; a folder or a file too large to read is moved
// aside whole.
func readSettings(s *session.Session, out *Outcome, now time.Time) ([]byte, fs.FileMode, error) {
	perm := fs.FileMode(0o600) // settings may hold env values such as tokens
	fi, err := s.Lstat(session.SettingsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, perm, nil
	case err != nil:
		return nil, 0, fmt.Errorf("examine %s: %w", session.SettingsFile, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if err := s.Remove(session.SettingsFile); err != nil {
			return nil, 0, fmt.Errorf("remove link at %s: %w", session.SettingsFile, err)
		}
		out.ReplacedLink = true
		return nil, perm, nil
	case fi.IsDir() || fi.Mode().IsRegular() && fi.Size() > maxSettingsBytes:
		aside := asideName(session.SettingsFile, now)
		if err := s.MoveAside(session.SettingsFile, aside); err != nil {
			return nil, 0, fmt.Errorf("move aside the %s at %s: %w", kindOf(fi), session.SettingsFile, err)
		}
		out.Replaced, out.SetAside = kindOf(fi), aside
		return nil, perm, nil
	case !fi.Mode().IsRegular():
		if err := s.Remove(session.SettingsFile); err != nil {
			return nil, 0, fmt.Errorf("remove the %s at %s: %w", kindOf(fi), session.SettingsFile, err)
		}
		out.Replaced = kindOf(fi)
		return nil, perm, nil
	}
	data, err := s.ReadFile(session.SettingsFile, maxSettingsBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", session.SettingsFile, err)
	}
	return data, fi.Mode().Perm(), nil
}

// kindOf names what stands at a path, for reports.
func kindOf(fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case fi.IsDir():
		return "folder"
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	case fi.Mode().IsRegular():
		return fmt.Sprintf("file of %d bytes (over %d)", fi.Size(), maxSettingsBytes)
	}
	return fi.Mode().Type().String()
}

func asideName(file string, now time.Time) string {
	return file + ".invalid-" + now.UTC().Format("20060102T150405.000Z")
}

// setAside keeps a copy of settings that could not be merged as they were, so nothing of the
// user's is ever destroyed.
func setAside(s *session.Session, file string, data []byte, now time.Time) (string, error) {
	name := asideName(file, now)
	if err := s.WriteFile(name, data, 0o600); err != nil {
		return "", fmt.Errorf("keep a copy of %s: %w", file, err)
	}
	return name, nil
}
