package session

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// OwnedBelow checks that every folder from base (excluded) down to dir (included) is a real
// folder, not a link, and belongs to uid: a path a user made their own way, not an alias of
// another user's folders through a link the user planted above them. A user's worker asks it of
// each session folder it finds in their home before it treats the session as theirs.
func OwnedBelow(base, dir string, uid int) error { return NewOwnership(base, uid).Below(dir) }

// Ownership is OwnedBelow for many folders under one base, remembering the folders it found
// owned: a rescan's hundred sessions share the six folders above them, which were looked at
// six hundred times a rescan. Keep one for one pass only: what it remembers ages.
type Ownership struct {
	base  string
	uid   int
	owned map[string]bool
}

// NewOwnership returns an Ownership that checks folders below base for uid.
func NewOwnership(base string, uid int) *Ownership {
	return &Ownership{base: filepath.Clean(base), uid: uid, owned: map[string]bool{}}
}

// Below is OwnedBelow(base, dir, uid), looking again at no folder it found owned before.
func (o *Ownership) Below(dir string) error {
	rel, err := filepath.Rel(o.base, filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not below %s", dir, o.base)
	}
	p := o.base
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, name)
		if o.owned[p] {
			continue
		}
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", p, ErrLink)
		case !fi.IsDir():
			return fmt.Errorf("%s: %w", p, ErrNotDir)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != o.uid {
			return fmt.Errorf("%s belongs to uid %d, not to uid %d", p, st.Uid, o.uid)
		}
		o.owned[p] = true
	}
	return nil
}
