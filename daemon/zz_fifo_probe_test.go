package daemon

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestProbeFIFOAtSessionsRootSystem(t *testing.T) {
	m := newMachine(t)
	sock, _ := m.system(t)
	home := filepath.Join(m.dir, "home")
	root := filepath.Join(home, "Library", "Application Support", "Claude", "local-agent-mode-sessions")
	os.MkdirAll(filepath.Dir(root), 0o755)
	if err := syscall.Mkfifo(root, 0o600); err != nil {
		t.Fatal(err)
	}
	m.writeConfig(t, `{"version":1,"cowork_enabled":true,"mode":"enforce"}`)
	_, stop := m.start(t)
	listening(t, sock)
	time.Sleep(3 * time.Second)
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop with a FIFO at a user's sessions root")
	}
}
