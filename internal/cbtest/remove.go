// Package cbtest holds helpers shared by coworkbridge's tests: ways of acting on a session tree
// as Cowork or an agent does. It is for tests only and imports nothing of coworkbridge.
package cbtest

import (
	"os"
	"path/filepath"
	"sort"
)

// RemoveTree deletes dir depth first as rm -rf and Cowork's deletion do: in each folder the
// files go first, in name order, then each sub-folder's contents, then the folder itself. after is
// called with each removed entry's path relative to dir, so a test can slow the removal down
// where a real one is slow (a large transcript folder) or act in the middle of it. It stops at the
// first error, which is what a removal undone under it ends with (a folder not empty).
func RemoveTree(dir string, after func(rel string)) error {
	return removeTree(dir, ".", after)
}

func removeTree(root, rel string, after func(string)) error {
	path := filepath.Join(root, rel)
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	sort.SliceStable(entries, func(i, j int) bool { return !entries[i].IsDir() && entries[j].IsDir() })
	for _, e := range entries {
		child := filepath.Join(rel, e.Name())
		if e.IsDir() {
			if err := removeTree(root, child, after); err != nil {
				return err
			}
			continue
		}
		if err := os.Remove(filepath.Join(root, child)); err != nil {
			return err
		}
		after(filepath.ToSlash(child))
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	after(filepath.ToSlash(rel))
	return nil
}
