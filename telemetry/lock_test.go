package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// heldByAnother reports whether another open file description of path cannot take the lock.
func heldByAnother(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return true
}

func TestTheLogLockExcludesOtherProcessesAndIsReleasedByUnlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl.lock")
	l := &fileLock{path: path}
	defer l.Close()
	for round := range 3 { // the file is kept open between rounds
		if err := l.Lock(time.Second); err != nil {
			t.Fatal(err)
		}
		if !heldByAnother(t, path) {
			t.Fatalf("round %d: the lock did not exclude another holder", round)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		if heldByAnother(t, path) {
			t.Fatalf("round %d: the lock was still held after Unlock", round)
		}
	}
}

func TestTheLogLockTakesTheFileAtItsPathWhenTheKeptOneWasReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl.lock")
	l := &fileLock{path: path}
	defer l.Close()
	if err := l.Lock(time.Second); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(time.Second); err != nil {
		t.Fatal(err)
	}
	// Another process opening the path now must be excluded: the lock is on the new file.
	if !heldByAnother(t, path) {
		t.Fatal("after the lock file was removed, Lock held the old file and excluded nobody")
	}
	l.Unlock()
}

func TestALockHeldByAnotherProcessFailsTheWriteAfterTheWaitInsteadOfHangingIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decisions.jsonl")
	holder, err := os.OpenFile(path+".lock", os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	log := Open(Options{Path: path, LockWait: 20 * time.Millisecond})
	defer log.Close()
	err = log.Write(Record{RID: "r1", Input: []byte("null")})
	if !errors.Is(err, ErrLockHeld) {
		t.Fatalf("a write under a held lock returned %v, want ErrLockHeld", err)
	}
	syscall.Flock(int(holder.Fd()), syscall.LOCK_UN)
	if err := log.Write(Record{RID: "r2", Input: []byte("null")}); err != nil {
		t.Fatalf("the write after the lock was released failed: %v", err)
	}
	recs, err := ReadFile(path)
	if err != nil || len(recs) != 1 || recs[0].RID != "r2" {
		t.Fatalf("the log holds %+v (%v), want only r2", recs, err)
	}
}
