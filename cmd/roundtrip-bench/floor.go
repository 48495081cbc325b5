package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The floor is the least a Go process must do to answer these hooks through these folders, run
// in place of the daemon once it has hooked the sessions: it watches only the folder each event
// arrives in, takes the event it was told of, and answers no objection the way the daemon
// answers most calls (the hook's own copy emptied and renamed to the decision's name). It
// classifies, records, checks and commits nothing. Its CPU per event is what no responder built
// on fsnotify and these folders goes below on the machine measured: the daemon's own work is
// its figure minus this one.

// floorSession is one session as the floor serves it: the folder its hooks hand events over in.
type floorSession struct {
	bridge string // the folder holding alive, decisions/ and (in the VM) the spool and staging/
	vm     bool
	offset int64  // how far the spool is read (VM)
	buf    []byte // the spool's read buffer, made once: the floor allocates nothing per event it need not
}

// startFloor starts the floor in a process of its own (this program, re-run), serving the
// folders given, and returns once it watches them.
func startFloor(bridges []string, vm bool) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	list := strings.Join(bridges, "\n")
	mode := "host"
	if vm {
		mode = "vm"
	}
	cmd := exec.Command(self, "-floor-serve", mode)
	cmd.Stdin = strings.NewReader(list)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("the floor did not start (%q): %v", line, err)
	}
	return cmd, nil
}

// serveFloor is the floor's process: the bridge folders on stdin, one per line; it answers until
// SIGTERM.
func serveFloor(mode string) error {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	sessions := map[string]*floorSession{}
	lease := time.Now().Add(time.Hour)
	for _, b := range strings.Fields(string(data)) {
		s := &floorSession{bridge: b, vm: mode == "vm"}
		if err := os.WriteFile(filepath.Join(b, "alive"), []byte("0\n"), 0o600); err != nil {
			return err
		}
		if err := os.Chtimes(filepath.Join(b, "alive"), lease, lease); err != nil {
			return err
		}
		if fi, err := os.Stat(filepath.Join(b, "events.jsonl")); err == nil {
			s.offset = fi.Size()
		}
		if err := w.Add(b); err != nil {
			return err
		}
		sessions[b] = s
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	fmt.Println("ready")
	for {
		select {
		case <-stop:
			return nil
		case ev := <-w.Events:
			if s := sessions[filepath.Dir(ev.Name)]; s != nil && ev.Has(fsnotify.Write) {
				s.answer(filepath.Base(ev.Name))
			}
		case err := <-w.Errors:
			return err
		}
	}
}

// answer answers what the change to the file base brought: an event file (host) or spool lines
// (VM).
func (s *floorSession) answer(base string) {
	if !s.vm {
		if rid, ok := strings.CutPrefix(base, ".ev-"); ok {
			s.adopt(base, rid)
		}
		return
	}
	if base != "events.jsonl" {
		return
	}
	f, err := os.Open(filepath.Join(s.bridge, base))
	if err != nil {
		return
	}
	defer f.Close()
	if s.buf == nil {
		s.buf = make([]byte, 64<<10)
	}
	n, _ := f.ReadAt(s.buf, s.offset)
	chunk := s.buf[:n]
	for {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			return
		}
		line := chunk[:i]
		chunk = chunk[i+1:]
		s.offset += int64(i + 1)
		if j := bytes.Index(line, []byte(`"rid":"`)); j >= 0 && len(line) >= j+7+32 {
			rid := string(line[j+7 : j+7+32])
			if !s.adopt(filepath.Join("staging", ".ev-"+rid), rid) {
				s.adopt(".ev-"+rid, rid) // staged beside the spool
			}
		}
	}
}

// adopt empties the hook's copy of its event, complete, and renames it to the decision's name.
func (s *floorSession) adopt(name, rid string) bool {
	p := filepath.Join(s.bridge, name)
	data, err := os.ReadFile(p)
	if err != nil || !bytes.HasSuffix(data, []byte("\n")) {
		return false // not complete yet: its write is another event
	}
	return os.Truncate(p, 0) == nil && os.Rename(p, filepath.Join(s.bridge, "decisions", rid+".json")) == nil
}
