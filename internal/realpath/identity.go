package realpath

import (
	"cmp"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// A name is only one way to reach a file: a second mount of a folder, a hard link, a firmlink,
// /.vol/<device>/<inode>, a case the volume ignores. Identity is what every name shares: the
// device and inode. Identities knows the protected places by identity, so that a path that
// reaches one of them under any name is written under the name the map knows it by.

// fileID is a file's identity on this machine.
type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // their widths differ by platform
}

// maxDepth bounds the folders looked at above a path.
const maxDepth = 64

// Identities are the protected places that exist, by identity. The zero value knows none.
type Identities struct {
	places map[fileID]string
	stat   func(string) (fs.FileInfo, error)
	// linked indexes the files inside the places that have more than one name, built when a
	// path first names such a file: a hard link made anywhere (an outputs folder) to a file in a
	// protected place is that file.
	linked *linkIndex
	// sessions are the sessions roots: a name inside one is a session's, which the calling
	// session may own.
	sessions []string
	// secrets, when set, are more folders searched for a file's other names (the read rules'
	// folders, see WithSecrets), asked only when a file with several names is looked up.
	secrets func() []string
}

// WithSecrets is ids that also search the folders secrets gives (absolute; asked once, when a
// file with several names is first looked up) for a file's other names: a hard link to a key is
// the key.
func (ids Identities) WithSecrets(secrets func() []string) Identities {
	ids.secrets = secrets
	return ids
}

// linkIndex is the hard-linked files of the protected places, by identity.
type linkIndex struct {
	once  sync.Once
	files map[fileID][]string
}

// maxNames bounds the names kept of one hard-linked file.
const maxNames = 8

// Identify looks up each of paths (following links: a place reached through its link is still
// the place) and remembers those that exist. stat nil: os.Stat.
func Identify(paths []string, stat func(string) (fs.FileInfo, error)) Identities {
	if stat == nil {
		stat = os.Stat
	}
	ids := Identities{places: map[fileID]string{}, stat: stat, linked: &linkIndex{}}
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			continue
		}
		if fi, err := stat(p); err == nil {
			if id, ok := idOf(fi); ok {
				if _, dup := ids.places[id]; !dup {
					ids.places[id] = filepath.Clean(p)
				}
			}
		}
	}
	return ids
}

// Place is path written through the protected place it reaches: the place's own name joined
// with what lies below it, when path, or the nearest of its folders that exists, is a place by
// identity; ok is false when it reaches none, or is already written so.
func (ids Identities) Place(path string) (string, bool) {
	if len(ids.places) == 0 || !filepath.IsAbs(path) {
		return path, false
	}
	path = filepath.Clean(path)
	if p, ok := ids.hardLinked(path); ok {
		return p, p != path
	}
	rest := ""
	for dir, depth := path, 0; depth < maxDepth; dir, depth = filepath.Dir(dir), depth+1 {
		if fi, err := ids.stat(dir); err == nil {
			if id, ok := idOf(fi); ok {
				if place, known := ids.places[id]; known && ids.still(place, id) {
					p := filepath.Join(place, rest)
					return p, p != path
				}
			}
		}
		if dir == filepath.Dir(dir) {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
	return path, false
}

// still reports whether place has identity id now: a file replaced since the identities were
// taken (health.json is rewritten by rename) freed its inode, which a new file of the agent's may
// have been given.
func (ids Identities) still(place string, id fileID) bool {
	fi, err := ids.stat(place)
	if err != nil {
		return false
	}
	now, ok := idOf(fi)
	return ok && now == id
}

// Of is the identities of a policy's places: all of them, what lies directly in guard's folders
// (see WithEntries), and the session folders below each of sessions (see SessionFolders).
func Of(all, guard, sessions []string) Identities {
	ids := Identify(append(WithEntries(all, guard), SessionFolders(sessions)...), nil)
	for _, s := range sessions {
		ids.sessions = append(ids.sessions, filepath.Clean(s))
	}
	return ids
}

// sessionDepth is how far below a sessions root a session's folder lies (account, organisation,
// session: see session.Locate).
const sessionDepth = 3

// SessionFolders are the folders down to a session's below each sessions root (at most
// maxEntries in each folder): a second mount of one session's folder has that folder's identity,
// not the root's, and must still be known as inside the root.
func SessionFolders(roots []string) []string {
	var out []string
	level := roots
	for range sessionDepth {
		var next []string
		for _, dir := range level {
			f, err := openDir(dir)
			if err != nil {
				continue
			}
			entries, _ := f.ReadDir(maxEntries)
			f.Close()
			for _, e := range entries {
				if e.IsDir() {
					next = append(next, filepath.Join(dir, e.Name()))
				}
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

// openDir opens a folder to list it, and nothing else: a FIFO planted where a folder is expected
// (a user's sessions root) fails at once instead of blocking the open until a writer comes.
func openDir(dir string) (*os.File, error) {
	return os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
}

// maxEntries bounds the entries of one folder whose identities are taken.
const maxEntries = 256

// WithEntries is paths and, for each of folders, the files and folders directly in it (at most
// maxEntries each): a hard link to coworkbridge's health.json or to a rotated decision log has
// the identity of that file, not of its folder.
func WithEntries(paths, folders []string) []string {
	out := append([]string(nil), paths...)
	for _, dir := range folders {
		f, err := openDir(dir)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(maxEntries)
		f.Close()
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
	}
	return out
}

// Bounds of the search for hard-linked files in the protected places: how deep below each place,
// and how many entries in all. A protected file past them, hard-linked elsewhere, is reached
// under the other name unseen (THREATS.md 9a).
const (
	linkDepth   = 4
	linkEntries = 4096
)

// hardLinked is the protected file path is another name of: a plain file with more than one
// name whose identity is a file's inside a protected place. A name outside the sessions roots (a
// secret folder, coworkbridge's own) is preferred; a name inside one (a session's, perhaps the
// caller's own) is given only for a path that is itself inside one, so that a protected file
// named through a link is never renamed to the calling session's hard link to it.
func (ids Identities) hardLinked(path string) (string, bool) {
	fi, err := ids.stat(path)
	if err != nil || !fi.Mode().IsRegular() || links(fi) < 2 || ids.linked == nil {
		return "", false
	}
	id, ok := idOf(fi)
	if !ok {
		return "", false
	}
	ids.linked.once.Do(func() { ids.linked.files = ids.linkedFiles() })
	names := ids.linked.files[id]
	for _, n := range names {
		if n != path && !ids.inSessions(n) && ids.still(n, id) {
			return n, true
		}
	}
	if !ids.inSessions(path) {
		return "", false
	}
	for _, n := range names {
		if n != path && ids.still(n, id) {
			return n, true
		}
	}
	return "", false
}

// HardLinked is the protected file path is another name of (see Identities.Place), for a path
// named where no link is followed on this machine (a VM's view of a session's folder: its links
// are the VM's): path itself, and every folder above it, must be no link.
func HardLinked(path string, places func() Identities) (string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || links(fi) < 2 {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(path); err != nil || real != filepath.Clean(path) {
		return "", false
	}
	return places().hardLinked(path)
}

// inSessions reports whether p lies in a sessions root.
func (ids Identities) inSessions(p string) bool {
	for _, root := range ids.sessions {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// linkedFiles walks the protected places that are folders, through real folders only, and keeps
// each plain file that has more than one name.
func (ids Identities) linkedFiles() map[fileID][]string {
	out := map[fileID][]string{}
	seen := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		f, err := openDir(dir)
		if err != nil {
			return
		}
		entries, _ := f.ReadDir(maxEntries)
		f.Close()
		for _, e := range entries {
			if seen++; seen > linkEntries {
				return
			}
			name := filepath.Join(dir, e.Name())
			switch {
			case e.Type().IsDir() && depth < linkDepth:
				walk(name, depth+1)
			case e.Type().IsRegular():
				if fi, err := e.Info(); err == nil && links(fi) > 1 {
					if id, ok := idOf(fi); ok && len(out[id]) < maxNames {
						out[id] = append(out[id], name)
					}
				}
			}
		}
	}
	// The secret and guard folders first: the bound on entries is shared, and the sessions
	// roots can hold many.
	var places []string
	if ids.secrets != nil {
		places = ids.secrets()
	}
	places = append(places, slices.Collect(maps.Values(ids.places))...)
	slices.SortStableFunc(places, func(a, b string) int {
		return cmp.Or(cmp.Compare(b2i(ids.inSessions(a)), b2i(ids.inSessions(b))), cmp.Compare(a, b))
	})
	for _, place := range places {
		if fi, err := os.Lstat(place); err == nil && fi.IsDir() {
			walk(place, 0)
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// links is how many names a file has (1 when it cannot be told).
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) //nolint:unconvert // its width differs by platform
	}
	return 1
}
