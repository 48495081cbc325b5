package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gofrs/flock"
)

// errAlreadyRunning is returned when another daemon of this user holds the lock.
type errAlreadyRunning struct{ pid int }

func (e errAlreadyRunning) Error() string {
	if e.pid > 0 {
		return fmt.Sprintf("coworkbridge is already running (pid %d)", e.pid)
	}
	return "coworkbridge is already running (pid unknown)"
}

// acquireLock takes the per-user daemon lock without waiting and records our pid in it, so that a
// second daemon can say which process holds it. The lock lasts until release or process exit.
func acquireLock(path string) (release func(), err error) {
	lk := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := lk.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, errAlreadyRunning{pid: readPID(path)}
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
