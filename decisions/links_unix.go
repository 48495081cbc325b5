//go:build unix

package decisions

import (
	"io/fs"
	"syscall"
)

// links is the number of hard links of a file; 0 when it cannot be told.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
