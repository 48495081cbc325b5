package session

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Level is how deep a path lies in the layout <root>/<account>/<org>/local_<uuid>/….
type Level int

const (
	LevelAccount Level = iota + 1 // <root>/<account>
	LevelOrg                      // <root>/<account>/<org>
	LevelSession                  // <root>/<account>/<org>/<entry>: a session folder, its metadata file, or anything else there
	LevelInside                   // below a session folder
)

// Place is where a path lies under a sessions root.
type Place struct {
	Root  string // the sessions root, as configured
	Level Level
	// Dir is the session folder the path belongs to: <root>/<account>/<org>/<entry> (the metadata
	// file's session for local_<uuid>.json); "" above LevelSession.
	Dir string
	// Rel is the path below Dir with forward slashes; "" at LevelSession.
	Rel string
	// Metadata: the path is a session's metadata file, local_<uuid>.json beside its folder.
	Metadata bool
}

// ID is the session folder's name, local_<uuid> for a real session; "" above LevelSession.
func (p Place) ID() string {
	if p.Dir == "" {
		return ""
	}
	return filepath.Base(p.Dir)
}

// IsSession reports whether the place is a session folder itself, named as Cowork names one.
func (p Place) IsSession() bool {
	return p.Level == LevelSession && !p.Metadata && strings.HasPrefix(p.ID(), sessionPrefix)
}

// Locate places path (absolute, cleaned here) under the first of roots that holds it. It reads
// nothing: whether the folders on the way are real ones is for Discover or OpenUnder to say. ok
// is false for a root itself and for a path under none of them.
func Locate(roots []string, path string) (p Place, ok bool) {
	path = filepath.Clean(path)
	for _, root := range roots {
		rel, err := filepath.Rel(filepath.Clean(root), path)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		p = Place{Root: root, Level: Level(min(len(parts), int(LevelInside)))}
		if p.Level >= LevelSession {
			entry := parts[idLevels]
			if p.Level == LevelSession && strings.HasPrefix(entry, sessionPrefix) && strings.HasSuffix(entry, ".json") {
				entry, p.Metadata = strings.TrimSuffix(entry, ".json"), true
			}
			p.Dir = filepath.Join(filepath.Clean(root), parts[0], parts[1], entry)
			p.Rel = strings.Join(parts[idLevels+1:], "/")
		}
		return p, true
	}
	return Place{}, false
}

// OpenUnder opens the session folder dir, which must lie at the session level under root, by
// walking down from root one folder at a time: each step is opened through the handle of the one
// before it and checked to be the folder seen there, never a link. A link anywhere on the way, even
// one swapped in during the walk, is refused, so the handle is the real session under the real
// root. Open trusts the path above the session folder; OpenUnder does not.
func OpenUnder(root, dir string) (*Session, error) {
	p, ok := Locate([]string{root}, dir)
	if !ok || p.Level != LevelSession || p.Metadata {
		return nil, fmt.Errorf("open session %s: not a session folder under %s", dir, root)
	}
	r, err := openRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", dir, err)
	}
	rel, _ := filepath.Rel(filepath.Clean(root), p.Dir)
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		next, err := openStep(r, name)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("open session %s: %s: %w", dir, name, err)
		}
		r = next
	}
	return &Session{dir: p.Dir, id: p.ID(), root: r}, nil
}

// openStep opens the folder name inside r, refusing a link or anything but a folder, and a swap
// between the look and the open.
func openStep(r *os.Root, name string) (*os.Root, error) {
	fi, err := r.Lstat(name)
	switch {
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, ErrLink
	case !fi.IsDir():
		return nil, ErrNotDir
	}
	next, err := openRootIn(r, name)
	if err != nil {
		return nil, err
	}
	if opened, err := next.Stat("."); err != nil || !os.SameFile(fi, opened) {
		next.Close()
		return nil, ErrChanged
	}
	return next, nil
}
