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
// another user's folders through a link the user planted above them. A root daemon asks it of a
// session a user's host call names before it treats the session as that user's (its quarantine,
// its flow, whether its own hook reports the call).
func OwnedBelow(base, dir string, uid int) error {
	rel, err := filepath.Rel(filepath.Clean(base), filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not below %s", dir, base)
	}
	p := filepath.Clean(base)
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, name)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %w", p, ErrLink)
		case !fi.IsDir():
			return fmt.Errorf("%s: %w", p, ErrNotDir)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
			return fmt.Errorf("%s belongs to uid %d, not to uid %d", p, st.Uid, uid)
		}
	}
	return nil
}
