package session

import (
	"os"
	"syscall"
	"time"
)

// ChangeTime is when the file's content or metadata last changed (its ctime): unlike the
// modification time, no one but the kernel sets it. Zero where the platform does not say.
func ChangeTime(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctimespec.Sec, st.Ctimespec.Nsec)
	}
	return time.Time{}
}
