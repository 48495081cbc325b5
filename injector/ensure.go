package injector

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/coworkbridge/coworkbridge/session"
)

// maxSettingsBytes bounds how much of a settings.json is read; Claude Code's own files are a few
// kilobytes.
const maxSettingsBytes = 4 << 20

// Outcome is what one Ensure did to a session.
type Outcome struct {
	// Wrote is set when settings.json was written.
	Wrote bool
	Merge MergeResult
	// SetAside names the copy kept of a file that could not be merged as it was.
	SetAside string
	// ReplacedLink: settings.json was a symbolic link (which Claude Code would follow) and has been
	// replaced by a real file.
	ReplacedLink bool
	// Project lists attempts found and undone in the project-level settings (see GuardProject).
	Project []string
	// Running: the session's CLI had already started (it has a transcript folder), so a hook written
	// for the first time now is unverified until an event arrives.
	Running bool
}

// Repairs lists, for logs and health, what Ensure had to undo.
func (o Outcome) Repairs() []string {
	var r []string
	if o.Merge.DisabledAllHooks {
		r = append(r, "removed disableAllHooks")
	}
	for _, k := range o.Merge.EnvRemoved {
		r = append(r, "removed env "+k)
	}
	r = append(r, o.Project...)
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

// Tampering lists what Ensure undid that only an attempt on the guard explains: nothing but the
// agent sets disableAllHooks or hands hooks a PATH in a Cowork session.
func (o Outcome) Tampering() []string {
	var r []string
	if o.Merge.DisabledAllHooks {
		r = append(r, "disableAllHooks was set")
	}
	for _, k := range o.Merge.EnvRemoved {
		r = append(r, "settings env set "+k)
	}
	return append(r, o.Project...)
}

// Ensure makes the session's settings.json carry exactly our current entry, and creates our folder
// so the hook need not. It writes only when something changed.
func Ensure(s *session.Session, e Entry, now time.Time) (Outcome, error) {
	var out Outcome
	// .claude is Cowork's to create: making it here could resurrect a session being deleted.
	if fi, err := s.Lstat(session.ClaudeDir); err != nil || !fi.IsDir() {
		if err == nil {
			err = session.ErrNotDir
		}
		return out, fmt.Errorf("examine %s: %w", session.ClaudeDir, err)
	}
	if err := s.MkdirAll(session.DecisionsDir, 0o700); err != nil {
		return out, fmt.Errorf("prepare %s: %w", session.BridgeDir, err)
	}
	if _, err := s.Lstat(session.ClaudeDir + "/projects"); err == nil {
		out.Running = true
	}
	project, perr := GuardProject(s, now)
	out.Project = project
	if perr != nil {
		return out, perr
	}
	data, perm, err := readSettings(s, &out)
	if err != nil {
		return out, err
	}
	merged, res, err := Merge(data, e)
	unparseable := errors.Is(err, ErrNotObject)
	if unparseable { // nothing in it can be kept in place: start from our entry alone
		merged, res, err = Merge(nil, e)
	}
	if err != nil {
		return out, fmt.Errorf("merge %s: %w", session.SettingsFile, err)
	}
	if unparseable || len(res.Damaged) > 0 {
		// A copy first, then the atomic replace: settings.json is never missing in between.
		if out.SetAside, err = setAside(s, session.SettingsFile, data, now); err != nil {
			return out, err
		}
	}
	out.Merge = res
	if !res.Changed && !out.ReplacedLink {
		return out, nil
	}
	if err := s.WriteFile(session.SettingsFile, merged, perm); err != nil {
		return out, fmt.Errorf("write %s: %w", session.SettingsFile, err)
	}
	out.Wrote = true
	return out, nil
}

// readSettings returns the current content (nil when absent) and the mode to write with. A
// symbolic link is removed, never followed: its target is not ours to read or change.
func readSettings(s *session.Session, out *Outcome) ([]byte, fs.FileMode, error) {
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
	}
	data, err := s.ReadFile(session.SettingsFile, maxSettingsBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", session.SettingsFile, err)
	}
	return data, fi.Mode().Perm(), nil
}

// setAside keeps a copy of settings that could not be merged as they were, so nothing of the
// user's is ever destroyed.
func setAside(s *session.Session, file string, data []byte, now time.Time) (string, error) {
	name := file + ".invalid-" + now.UTC().Format("20060102T150405.000Z")
	if err := s.WriteFile(name, data, 0o600); err != nil {
		return "", fmt.Errorf("keep a copy of %s: %w", file, err)
	}
	return name, nil
}
