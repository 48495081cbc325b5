package hostsocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Handler answers one request from a caller the kernel named.
type Handler interface {
	Serve(ctx context.Context, p Peer, r Request) Answer
}

// Limits on what callers can hold: a caller that connects and sends nothing holds a slot until
// readTimeout, and one user's connections can hold at most perUser slots, so that no user (or
// agent) can keep another user's hooks waiting.
const (
	maxConns    = 512
	perUser     = 128
	readTimeout = time.Second
)

// Server is the listening socket.
type Server struct {
	path string
	ln   *net.UnixListener
	h    Handler
	log  *slog.Logger

	mu    sync.Mutex
	users map[uint32]int // connections being served, by caller
}

// Listen makes the socket's folder (root's, 0755: anyone may reach the socket, no one else may
// put a thing there) and listens at path, connectable by every user.
func Listen(path string, h Handler, log *slog.Logger) (*Server, error) {
	if err := socketFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSocket != 0:
		_ = os.Remove(path) // a previous daemon's
	case err == nil:
		return nil, fmt.Errorf("listen on %s: a %v is there, not a socket; remove it", path, fi.Mode().Type())
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// The socket is made under a name of its own and renamed into place once it listens: a hook
	// that finds the path can connect, never meeting a socket bound but not yet listening.
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	_ = os.Remove(tmp) // a daemon's that stopped halfway; the folder is this user's alone
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)                   // its name moves: Run removes the path itself
	if err := os.Chmod(tmp, 0o666); err != nil { // connect(2) needs write access
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("open %s to every user: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return &Server{path: path, ln: ln, h: h, log: log, users: map[uint32]int{}}, nil
}

// socketFolder makes dir, or checks the one there: a real folder of this process's user that
// no one else may write.
func socketFolder(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make the socket folder %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket folder %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("socket folder %s is a %v, not a folder; remove it", dir, fi.Mode().Type())
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("socket folder %s belongs to uid %d, not to this daemon's user; remove it", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		if err := os.Chmod(dir, 0o755); err != nil {
			return fmt.Errorf("socket folder %s is writable by others and cannot be changed: %w", dir, err)
		}
	}
	return nil
}

// Path is where the server listens.
func (s *Server) Path() string { return s.path }

// Run serves connections until ctx is cancelled, then closes the socket and waits for the
// requests being served.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer func() {
		s.ln.Close()
		os.Remove(s.path) // its name moved from where it was made: unlinking it is ours
	}()
	slots := make(chan struct{}, maxConns)
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("socket %s closed: %w", s.path, err)
			}
			s.log.Warn("cannot accept a host hook's connection", "socket", s.path, "err", err)
			time.Sleep(10 * time.Millisecond) // out of descriptors: let some close
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			c.Close()
			return nil
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.serve(ctx, c)
		})
	}
}

func (s *Server) serve(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	p, err := peerOf(c)
	if err != nil {
		s.log.Warn("a host hook's connection has no peer credentials; refused", "err", err)
		return
	}
	if !s.enter(p.UID) {
		// Drained before the answer: a socket closed with the request unread resets, and the
		// caller would see a broken connection instead of the reason.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, MaxRequest))
		s.reply(c, Answer{V: Version, Error: "too many connections from this user at once"})
		return
	}
	defer s.leave(p.UID)
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	var req Request
	if err := readJSON(c, MaxRequest, &req); err != nil {
		s.reply(c, Answer{V: Version, Error: "cannot read the request: " + err.Error()})
		return
	}
	if req.V != Version {
		s.reply(c, Answer{V: Version, Error: fmt.Sprintf("protocol version %d, this daemon speaks %d: update coworkbridge", req.V, Version)})
		return
	}
	s.reply(c, s.h.Serve(ctx, p, req))
}

func (s *Server) reply(c *net.UnixConn, a Answer) {
	data, err := json.Marshal(a)
	if err != nil {
		data = []byte(`{"v":1,"error":"cannot encode the answer"}`)
	}
	_ = c.SetWriteDeadline(time.Now().Add(readTimeout))
	_, _ = c.Write(data)
}

func (s *Server) enter(uid uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[uid] >= perUser {
		return false
	}
	s.users[uid]++
	return true
}

func (s *Server) leave(uid uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[uid]--; s.users[uid] <= 0 {
		delete(s.users, uid)
	}
}
