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

// Limits on what one user's callers can hold, so that no user (or agent) keeps another user's
// hooks waiting: the accept loop never waits (it reads the caller's uid, which costs no I/O, and
// closes a connection over perUser at once), so the listen backlog stays empty whatever one uid
// floods it with; a caller that connects and sends nothing holds one of its user's slots until
// readTimeout; and a user's requests being read hold at most perUserBytes of memory.
const (
	perUser      = 64
	perUserBytes = 2*MaxRequest + 1<<20
	readTimeout  = time.Second
)

// Server is the listening socket.
type Server struct {
	path string
	ln   *net.UnixListener
	h    Handler
	log  *slog.Logger

	mu    sync.Mutex
	users map[uint32]int   // connections being served, by caller
	bytes map[uint32]int64 // request bytes held, by caller
	// refused counts connections closed at once for being over their user's limit, for the log.
	refused map[uint32]int
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
	return &Server{path: path, ln: ln, h: h, log: log, users: map[uint32]int{}, bytes: map[uint32]int64{}, refused: map[uint32]int{}}, nil
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
	refusing := make(chan struct{}, refusers)
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
		p, err := peerOf(c)
		if err != nil {
			s.log.Warn("a host hook's connection has no peer credentials; refused", "err", err)
			c.Close()
			continue
		}
		if !s.enter(p.UID) {
			// Never waited on here: waiting would let one user's flood fill the backlog. Up to
			// refusers at once are told why beside the loop; past them the connection just closes.
			select {
			case refusing <- struct{}{}:
				wg.Go(func() {
					defer func() { <-refusing }()
					refuse(c)
				})
			default:
				c.Close()
			}
			continue
		}
		wg.Go(func() {
			defer s.leave(p.UID)
			s.serve(ctx, c, p)
		})
	}
}

func (s *Server) serve(ctx context.Context, c *net.UnixConn, p Peer) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(readTimeout))
	data, held, err := s.read(c, p.UID)
	defer s.release(p.UID, held)
	var req Request
	switch {
	case errors.Is(err, errTooLarge):
		req = Request{V: Version, Kind: KindCall, Oversized: held}
	case err != nil:
		s.reply(c, Answer{V: Version, Error: "cannot read the request: " + err.Error()})
		return
	default:
		if err := json.Unmarshal(data, &req); err != nil {
			s.reply(c, Answer{V: Version, Error: "cannot read the request: not a message of this protocol: " + err.Error()})
			return
		}
	}
	if req.V != Version {
		s.reply(c, Answer{V: Version, Error: fmt.Sprintf("protocol version %d, this daemon speaks %d: update coworkbridge", req.V, Version)})
		return
	}
	s.reply(c, s.h.Serve(ctx, p, req))
}

var tooMany = []byte(`{"v":1,"error":"too many connections from this user at once"}`)

// refusers bounds the connections over their user's limit being told so at once.
const refusers = 64

// refuse tells a caller over its user's limit why, after taking in (briefly, and little of) its
// request: a socket closed with a request unread resets, and the caller would see a broken
// connection instead of the reason.
func refuse(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, _ = io.Copy(io.Discard, io.LimitReader(c, readChunk))
	_ = c.SetWriteDeadline(time.Now().Add(readTimeout))
	_, _ = c.Write(tooMany)
}

// readChunk is how much of a request is read, and charged to its user, at a time.
const readChunk = 64 << 10

// read reads a request until its writer half-closes, charging what it holds to uid: past
// MaxRequest it stops (errTooLarge, the rest unread), and past the user's share of memory it
// gives up (errUserBytes). held is what was charged, for release.
func (s *Server) read(c *net.UnixConn, uid uint32) (data []byte, held int64, err error) {
	buf := make([]byte, readChunk)
	for {
		if !s.charge(uid, readChunk) {
			return nil, held, errUserBytes
		}
		held += readChunk
		n, rerr := c.Read(buf)
		data = append(data, buf[:n]...)
		if int64(len(data)) > MaxRequest {
			return nil, held, errTooLarge
		}
		if errors.Is(rerr, io.EOF) {
			return data, held, nil
		}
		if rerr != nil {
			return nil, held, rerr
		}
	}
}

var errUserBytes = errors.New("this user's hooks are sending more at once than the daemon takes from one user")

func (s *Server) charge(uid uint32, n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes[uid]+n > perUserBytes {
		return false
	}
	s.bytes[uid] += n
	return true
}

func (s *Server) release(uid uint32, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes[uid] -= n; s.bytes[uid] <= 0 {
		delete(s.bytes, uid)
	}
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
		if s.refused[uid]++; s.refused[uid]&(s.refused[uid]-1) == 0 { // 1, 2, 4, 8…: a flood logs a few lines
			s.log.Warn("a user's hooks hold too many connections at once; more are closed unanswered (their hooks judge alone, and deny in enforce)",
				"uid", uid, "limit", perUser, "closed", s.refused[uid])
		}
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
