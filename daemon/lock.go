package daemon

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// AlreadyRunningError is returned when another daemon of this user holds the lock.
type AlreadyRunningError struct{ PID int }

func (e *AlreadyRunningError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("coworkbridge is already running (pid %d)", e.PID)
	}
	return "coworkbridge is already running (pid unknown)"
}

// Lock takes the per-user daemon lock without waiting and records our pid in it, so that a
// second daemon can say which process holds it. The lock lasts until release or process exit.
func Lock(path string) (release func(), err error) {
	lk := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, &AlreadyRunningError{PID: readPID(path)}
	}
	// The pid is informative only: the flock, not the file's content, is what excludes.
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		lk.Unlock()
		return nil, fmt.Errorf("record pid in %s: %w", path, err)
	}
	return func() { lk.Unlock() }, nil
}

func readPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return pid
}

// Running reports whether a daemon holds the lock at path. It asks the lock, not the pid: the
// daemon holds it exclusively for its whole life. The shared lock taken here to ask is released
// at once.
func Running(lockPath string) bool {
	if _, err := os.Stat(lockPath); err != nil {
		return false
	}
	lk := flock.New(lockPath, flock.SetFlag(os.O_RDONLY))
	ok, err := lk.TryRLock()
	if err != nil {
		return false
	}
	if ok {
		lk.Unlock()
	}
	return !ok
}
