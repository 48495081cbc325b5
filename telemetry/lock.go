package telemetry

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileLock is the log's inter-process lock: flock(2) on a file beside it, which every process
// writing the log (the daemon, each host hook) takes around its append. The daemon appends for
// every event, so its lock file is opened once and kept: taking and releasing the lock then costs
// three system calls instead of the nine of opening and closing the file each time. It is
// compatible with any other flock(2) user of the same file (gofrs/flock in older releases).
type fileLock struct {
	path string
	f    *os.File
	fd   int
	fi   os.FileInfo // the lock file as opened, to notice it removed or replaced
}

// DefaultLockWait is how long a writer waits for another to release the log's lock. A writer
// holds it for one append (well under a millisecond); a lock held longer is someone keeping it.
const DefaultLockWait = 250 * time.Millisecond

// ErrLockHeld is returned by writes when another process held the log's lock past the wait.
var ErrLockHeld = errors.New("another process holds the decision log's lock")

// Lock takes the lock, waiting at most wait for other holders.
func (l *fileLock) Lock(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for range 3 {
		if err := l.open(); err != nil {
			return err
		}
		if err := lockBy(l.fd, deadline); err != nil {
			return fmt.Errorf("lock %s: %w", l.path, err)
		}
		// A lock file removed or replaced since it was opened excludes nobody who opens the
		// one at the path now: take that one instead.
		if fi, err := os.Lstat(l.path); err == nil && os.SameFile(fi, l.fi) {
			return nil
		}
		_ = flock(l.fd, syscall.LOCK_UN)
		l.Close()
	}
	return fmt.Errorf("lock %s: the lock file keeps being replaced", l.path)
}

// lockBy takes an exclusive flock on fd, polling (flock has no timeout) until deadline.
func lockBy(fd int, deadline time.Time) error {
	pause := 200 * time.Microsecond
	for {
		err := flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return ErrLockHeld
		}
		time.Sleep(min(pause, left))
		pause = min(pause*2, 10*time.Millisecond)
	}
}

// Unlock releases the lock and keeps the file open for the next Lock.
func (l *fileLock) Unlock() error {
	if l.f == nil {
		return nil
	}
	return flock(l.fd, syscall.LOCK_UN)
}

// Close releases the lock file.
func (l *fileLock) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f, l.fi = nil, nil
	return err
}

// open opens the lock file, or makes it. Like the log, it must be a regular file this user made:
// anything else at its name (a link, a pipe, a file of another user) is set aside.
func (l *fileLock) open() error {
	if l.f != nil {
		return nil
	}
	f, fi, _, err := openOrCreateOwn(l.path, os.O_RDONLY)
	if err != nil {
		return err
	}
	l.f, l.fd, l.fi = f, int(f.Fd()), fi
	return nil
}

func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
