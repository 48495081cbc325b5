package realpath

import (
	"io/fs"
	"os"
	"path/filepath"
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
}

// Identify looks up each of paths (following links: a place reached through its link is still
// the place) and remembers those that exist. stat nil: os.Stat.
func Identify(paths []string, stat func(string) (fs.FileInfo, error)) Identities {
	if stat == nil {
		stat = os.Stat
	}
	ids := Identities{places: map[fileID]string{}, stat: stat}
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
	return Identify(append(WithEntries(all, guard), SessionFolders(sessions)...), nil)
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
