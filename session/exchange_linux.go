package session

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the entries a and b of the folder d in one step; both must exist.
func exchange(d *os.File, a, b string) error {
	fd := int(d.Fd())
	err := unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return ErrNoExchange
	}
	return &os.LinkError{Op: "renameat2 exchange", Old: a, New: b, Err: err}
}
