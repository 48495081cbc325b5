package injector

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged user can still write on the volume holding path.
func freeBytes(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
