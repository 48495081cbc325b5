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
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/coworkbridge/coworkbridge/internal/goroutines"
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
	readAll      = 10 * time.Second
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
	// own are the users' own sockets (UserPath), each with its backlog; running is set by Run,
	// which serves each one made before or after it started.
	own     map[uint32]*net.UnixListener
	running *runState
	// ownFailed is why a user's own socket could not be made, last time: Users runs at every
	// rescan, and the log says it once, and again when the reason changes or it is made.
	ownFailed map[uint32]string
	// chunks are read buffers, kept between connections: a buffer of readChunk made in read
	// lived on the connection's stack, which then grew (and was copied) to twice that for every
	// call.
	chunks sync.Pool
}

// runState is what Run gives the accept loops Users starts while it runs.
type runState struct {
	ctx  context.Context
	wg   *sync.WaitGroup
	warm *goroutines.Warm
}

// UserPath is the socket of the user uid beside the shared one at path. A user's hooks connect
// there first: the backlog of a socket only its user can reach cannot be filled by another
// user's flood, of the shared socket or of their own.
func UserPath(path string, uid uint32) string {
	return filepath.Join(filepath.Dir(path), "users", strconv.FormatUint(uint64(uid), 10)+".sock")
}

// Users gives each of uids a socket of its own (UserPath: in a folder of root's, the socket
// the user's, mode 0600, so that only that user can connect) and takes away those of users no
// longer listed. The shared socket stays for everyone.
func (s *Server) Users(uids []uint32) {
	want := map[uint32]bool{}
	for _, uid := range uids {
		want[uid] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, ln := range s.own {
		if !want[uid] {
			ln.Close()
			_ = os.Remove(UserPath(s.path, uid))
			delete(s.own, uid)
		}
	}
	for uid := range want {
		if s.own[uid] != nil {
			continue
		}
		ln, err := listenOwn(UserPath(s.path, uid), uid)
		if err != nil {
			if s.ownFailed[uid] != err.Error() {
				s.log.Warn("cannot make a user's own socket; their hooks use the shared one", "uid", uid, "err", err)
				s.ownFailed[uid] = err.Error()
			}
			continue
		}
		if _, failed := s.ownFailed[uid]; failed {
			s.log.Info("a user's own socket is made at last", "uid", uid)
			delete(s.ownFailed, uid)
		}
		s.own[uid] = ln
		if r := s.running; r != nil {
			r.wg.Go(func() { _ = s.accept(r.ctx, ln, &uid, r.wg, r.warm) })
		}
	}
}

// listenOwn listens at path for uid alone.
func listenOwn(path string, uid uint32) (*net.UnixListener, error) {
	if err := socketFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		_ = os.Remove(path) // a previous daemon's
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".new")
	_ = os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	// Root's folder, root's name: giving the socket to its user lets them connect (and chmod
	// it, which lets no one else in: the peer's uid is checked).
	err = os.Chmod(tmp, 0o600)
	if err == nil {
		err = os.Lchown(tmp, int(uid), -1)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("make %s the user's: %w", path, err)
	}
	return ln, nil
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
	return &Server{path: path, ln: ln, h: h, log: log, users: map[uint32]int{}, bytes: map[uint32]int64{}, refused: map[uint32]int{},
		own: map[uint32]*net.UnixListener{}, ownFailed: map[uint32]string{}}, nil
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

// Run serves connections until ctx is cancelled, then closes the sockets and waits for the
// requests being served.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { s.closeAll() })
	defer stop()
	defer s.closeAll()
	s.mu.Lock()
	served := goroutines.NewWarm(ctx.Done(), &wg)
	s.running = &runState{ctx: ctx, wg: &wg, warm: served}
	for uid, ln := range s.own {
		wg.Go(func() { _ = s.accept(ctx, ln, &uid, &wg, served) })
	}
	s.mu.Unlock()
	return s.accept(ctx, s.ln, nil, &wg, served)
}

// closeAll closes every socket and removes their names (moved from where they were made:
// unlinking them is ours).
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ln.Close()
	os.Remove(s.path)
	for uid, ln := range s.own {
		ln.Close()
		os.Remove(UserPath(s.path, uid))
	}
	s.own = map[uint32]*net.UnixListener{}
	s.running = nil
}

// accept serves ln's connections until it closes; only, when set, is the one uid it takes.
func (s *Server) accept(ctx context.Context, ln *net.UnixListener, only *uint32, wg *sync.WaitGroup, served *goroutines.Warm) error {
	refusing := make(chan struct{}, refusers)
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || (only != nil && errors.Is(err, net.ErrClosed)) {
				return nil // stopping, or the user's socket taken away
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
		if only != nil && p.UID != *only {
			c.Close() // another user's, through a socket its owner opened to them
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
		served.Go(func() {
			defer s.leave(p.UID)
			s.serve(ctx, c, p)
		})
	}
}

func (s *Server) serve(ctx context.Context, c *net.UnixConn, p Peer) {
	defer c.Close()
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
		if err := decode(data, &req); err != nil {
			s.reply(c, Answer{V: Version, Error: "cannot read the request: " + err.Error()})
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
	chunk, _ := s.chunks.Get().(*[readChunk]byte)
	if chunk == nil {
		chunk = new([readChunk]byte)
	}
	defer s.chunks.Put(chunk)
	buf := chunk[:]
	last := time.Now().Add(readAll)
	for {
		if !s.charge(uid, readChunk) {
			return nil, held, errUserBytes
		}
		held += readChunk
		// Each read must bring something within readTimeout (a caller that says nothing holds
		// its slot no longer), and the whole request come within readAll.
		next := time.Now().Add(readTimeout)
		if next.After(last) {
			next = last
		}
		_ = c.SetReadDeadline(next)
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
