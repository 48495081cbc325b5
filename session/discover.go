package session

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Cowork keeps each session at <root>/<account>/<org>/local_<uuid>/, with a local_<uuid>.json
// metadata file beside the folder. The two id levels are opaque to us.
const (
	sessionPrefix = "local_"
	idLevels      = 2
	// maxDirEntries bounds how much of one folder a scan reads, so a folder stuffed with entries
	// costs a bounded amount of time and memory.
	maxDirEntries = 100_000
)

// Found is a session folder found by Discover.
type Found struct {
	Dir  string // absolute path of the local_<uuid> folder
	ID   string // local_<uuid>
	Root string // the sessions root it lies under
	// ModTime is the latest modification time of the folder, its .claude, our folder in it and the
	// metadata file beside it: a rough sign of when the session was last active.
	ModTime time.Time
}

// Scan is what one pass over the sessions roots found.
type Scan struct {
	Sessions []Found
	// Pending are local_* folders that have no .claude yet: a session being set up.
	Pending []string
	// Unrecognised are entries that do not fit the known layout: a folder where none belongs, a
	// session folder at the wrong depth, or any symbolic link (never followed). Many of them
	// suggest Cowork has changed its layout.
	Unrecognised []string
	// Folders are the account and org folders walked on the way: where new sessions appear.
	Folders []string
	// MissingRoots are configured roots that do not exist (yet).
	MissingRoots []string
	// Errors are roots or folders that could not be read.
	Errors []error
	// Truncated is set when the limit on sessions or on entries of one folder cut the scan short.
	Truncated bool

	// known, when set, answers for a session folder the caller already follows and needs no
	// look at: its ModTime as the caller knows it.
	known func(dir string) (time.Time, bool)
}

// Discover walks each root down the known layout, never following a link, and returns at most
// limit sessions.
func Discover(roots []string, limit int) Scan { return DiscoverKnown(roots, limit, nil) }

// DiscoverKnown is Discover for a caller that follows some sessions already: for a session
// folder known answers for, its listing is all the scan looks at (the folder is there, and a
// folder of the layout), and its ModTime is known's. The caller answers only for sessions whose
// every change its watches would have told it of.
func DiscoverKnown(roots []string, limit int, known func(dir string) (time.Time, bool)) Scan {
	sc := Scan{known: known}
	for _, root := range roots {
		fi, err := os.Lstat(root)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			sc.MissingRoots = append(sc.MissingRoots, root)
			continue
		case err != nil:
			sc.Errors = append(sc.Errors, err)
			continue
		case !fi.IsDir():
			// A root that is a link or a file is configuration the admin controls, but we still
			// refuse to follow it: the layout below must be what Cowork made.
			sc.Unrecognised = append(sc.Unrecognised, root)
			continue
		}
		sc.walk(root, root, 0, limit)
	}
	return sc
}

func (sc *Scan) walk(root, dir string, depth, limit int) {
	entries, truncated, err := readDir(dir)
	if err != nil {
		sc.Errors = append(sc.Errors, err)
		return
	}
	sc.Truncated = sc.Truncated || truncated
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // .DS_Store and friends
		}
		p := filepath.Join(dir, name)
		isSession := strings.HasPrefix(name, sessionPrefix)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			sc.Unrecognised = append(sc.Unrecognised, p)
		case !e.IsDir():
			// Files are Cowork's business (local_<uuid>.json metadata among them).
		case depth < idLevels && isSession:
			sc.Unrecognised = append(sc.Unrecognised, p) // a session at the wrong depth
		case depth < idLevels:
			sc.Folders = append(sc.Folders, p)
			sc.walk(root, p, depth+1, limit)
		case !isSession:
			sc.Unrecognised = append(sc.Unrecognised, p)
		case len(sc.Sessions) >= limit:
			sc.Truncated = true
			return
		default:
			sc.addSession(root, p)
		}
	}
}

func (sc *Scan) addSession(root, dir string) {
	if sc.known != nil {
		if mod, ok := sc.known(dir); ok {
			sc.Sessions = append(sc.Sessions, Found{Dir: dir, ID: filepath.Base(dir), Root: root, ModTime: mod})
			return
		}
	}
	claude, err := os.Lstat(filepath.Join(dir, ClaudeDir))
	if errors.Is(err, fs.ErrNotExist) {
		sc.Pending = append(sc.Pending, dir)
		return
	}
	if err != nil || !claude.IsDir() { // a link or a file where .claude belongs
		sc.Unrecognised = append(sc.Unrecognised, filepath.Join(dir, ClaudeDir))
		return
	}
	mod := claude.ModTime()
	// Each hook call creates and removes a temporary file in our folder, so its time tracks use.
	for _, p := range []string{dir, dir + ".json", filepath.Join(dir, BridgeDir)} {
		if fi, err := os.Lstat(p); err == nil && fi.ModTime().After(mod) {
			mod = fi.ModTime()
		}
	}
	sc.Sessions = append(sc.Sessions, Found{Dir: dir, ID: filepath.Base(dir), Root: root, ModTime: mod})
}

// readDir reads at most maxDirEntries entries of dir, sorted by name.
func readDir(dir string) ([]fs.DirEntry, bool, error) {
	// O_NOFOLLOW: a folder swapped for a link since we listed its parent is not followed.
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	entries, err := f.ReadDir(maxDirEntries)
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	truncated := false
	if len(entries) == maxDirEntries {
		more, _ := f.ReadDir(1)
		truncated = len(more) > 0
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, truncated, nil
}
