package hostsocket

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Call sends req to the daemon at path and returns its answer, all before deadline.
//
// It talks to the socket with plain blocking system calls, its deadline a timeout on the socket,
// and not through package net: a hook is a process per tool call, and net's poller (its own
// descriptor, a thread woken at each step) cost a system hook about a tenth of a bare shell's
// run.
func Call(path string, req Request, deadline time.Time) (Answer, error) {
	c, err := dial(path, deadline)
	if err != nil {
		return Answer{}, fmt.Errorf("reach coworkbridge's daemon at %s: %w", path, err)
	}
	defer c.close()
	req.V = Version
	data, err := encode(req)
	if err != nil {
		return Answer{}, fmt.Errorf("encode the request: %w", err)
	}
	werr := c.write(data)
	_ = unix.Shutdown(c.fd, unix.SHUT_WR)
	var a Answer
	// A daemon that refused the request unread (too large) answered before closing: its answer
	// is there to read even when the write failed.
	if err := readAnswer(c, &a); err != nil {
		if werr != nil {
			return Answer{}, fmt.Errorf("send to coworkbridge's daemon: %w", werr)
		}
		return Answer{}, fmt.Errorf("read coworkbridge's daemon's answer: %w", err)
	}
	if a.Error != "" {
		return a, fmt.Errorf("coworkbridge's daemon: %s", a.Error)
	}
	return a, nil
}

// busyWait is the pause before connecting again to a socket whose backlog was full.
const busyWait = 2 * time.Millisecond

// dial connects to this user's own socket (UserPath), or where there is none the shared one at
// path; a full backlog is tried again until deadline.
func dial(path string, deadline time.Time) (*conn, error) {
	own := UserPath(path, uint32(os.Getuid()))
	for {
		c, err := connect(own, deadline)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			c, err = connect(path, deadline)
		}
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.EAGAIN) || time.Now().Add(busyWait).After(deadline) {
			return nil, err
		}
		time.Sleep(busyWait)
	}
}

// conn is a connected socket whose system calls end by its deadline: each is bounded by the
// time left (SO_SNDTIMEO, SO_RCVTIMEO), set again before every call after the first, so that
// a peer that trickles cannot stretch the calls past it.
type conn struct {
	fd       int
	deadline time.Time
	calls    int
}

// connect opens a socket to path whose calls time out at deadline.
func connect(path string, deadline time.Time) (*conn, error) {
	left := time.Until(deadline)
	if left <= 0 {
		return nil, os.ErrDeadlineExceeded
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	unix.CloseOnExec(fd) // the hook runs coworkbridge when the daemon cannot answer
	c := &conn{fd: fd, deadline: deadline}
	for _, opt := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
		if err := c.bound(opt, left); err != nil {
			c.close()
			return nil, fmt.Errorf("set the socket's timeout: %w", err)
		}
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// Read reads as a blocking socket does, again after a signal (a call with a timeout is not
// restarted by the kernel), and says a timeout as the deadline passed.
func (c *conn) Read(p []byte) (int, error) {
	if err := c.next(unix.SO_RCVTIMEO); err != nil {
		return 0, err
	}
	for {
		n, err := unix.Read(c.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// write writes all of data, or says why it could not.
func (c *conn) write(data []byte) error {
	for len(data) > 0 {
		if err := c.next(unix.SO_SNDTIMEO); err != nil {
			return err
		}
		n, err := unix.Write(c.fd, data)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return os.ErrDeadlineExceeded
		case err != nil:
			return err
		}
		data = data[n:]
	}
	return nil
}

func (c *conn) close() { _ = unix.Close(c.fd) }

// next bounds the next call by the time left: the first needs nothing (connect set it).
func (c *conn) next(opt int) error {
	if c.calls++; c.calls == 1 {
		return nil
	}
	left := time.Until(c.deadline)
	if left <= 0 {
		return os.ErrDeadlineExceeded
	}
	return c.bound(opt, left)
}

func (c *conn) bound(opt int, d time.Duration) error {
	tv := unix.NsecToTimeval(max(d, time.Microsecond).Nanoseconds())
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, opt, &tv)
}
