package session

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// noHang runs fn and fails the test if it has not returned long after it could have: opening a
// FIFO for reading blocks until a writer comes, so a hang here is the bug itself. The FIFO is
// then opened for writing, which releases a blocked open, so that the test ends either way.
func noHang(t *testing.T, fifo string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("blocked opening a FIFO where a folder was expected")
	}
}

// A FIFO planted where a folder is expected (the user's own sessions root, a session's folders)
// is refused at once: one user's FIFO must not stall a daemon that serves every user.
func TestAFIFOWhereAFolderIsExpectedIsRefusedNotOpened(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	if err := syscall.Mkfifo(root, 0o600); err != nil {
		t.Fatal(err)
	}
	noHang(t, root, func() {
		if _, err := OpenUnder(root, filepath.Join(root, "a", "o", "local_x")); err == nil {
			t.Error("a session opened under a FIFO")
		}
	})
	noHang(t, root, func() {
		if _, err := openRoot(root); err == nil {
			t.Error("a FIFO opened as a folder")
		}
	})
	dir := filepath.Join(base, "real")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r, err := openRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fifo := filepath.Join(dir, "inner")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	noHang(t, fifo, func() {
		if _, err := openRootIn(r, "inner"); err == nil {
			t.Error("a FIFO inside a root opened as a folder")
		}
	})
}
