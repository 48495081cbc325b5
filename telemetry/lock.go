package telemetry

import (
	"errors"
	"fmt"
	"os"
	"syscall"
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

// Lock takes the lock, waiting for other holders.
func (l *fileLock) Lock() error {
	for range 3 {
		if err := l.open(); err != nil {
			return err
		}
		if err := flock(l.fd, syscall.LOCK_EX); err != nil {
			return err
		}
		// A lock file removed or replaced since it was opened excludes nobody who opens the
		// one at the path now: take that one instead.
		if fi, err := os.Stat(l.path); err == nil && os.SameFile(fi, l.fi) {
			return nil
		}
		_ = flock(l.fd, syscall.LOCK_UN)
		l.Close()
	}
	return fmt.Errorf("lock %s: the lock file keeps being replaced", l.path)
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

func (l *fileLock) open() error {
	if l.f != nil {
		return nil
	}
	f, err := os.OpenFile(l.path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
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
