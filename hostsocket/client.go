package hostsocket

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"
)

// Call sends req to the daemon at path and returns its answer, all before deadline.
func Call(path string, req Request, deadline time.Time) (Answer, error) {
	c, err := dial(path, deadline)
	if err != nil {
		return Answer{}, fmt.Errorf("reach coworkbridge's daemon at %s: %w", path, err)
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	req.V = Version
	data, err := encode(req)
	if err != nil {
		return Answer{}, fmt.Errorf("encode the request: %w", err)
	}
	_, werr := c.Write(data)
	_ = c.CloseWrite()
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
func dial(path string, deadline time.Time) (*net.UnixConn, error) {
	own := UserPath(path, uint32(os.Getuid()))
	d := net.Dialer{Deadline: deadline}
	for {
		conn, err := d.Dial("unix", own)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			conn, err = d.Dial("unix", path)
		}
		if err == nil {
			return conn.(*net.UnixConn), nil
		}
		if !errors.Is(err, syscall.EAGAIN) || time.Now().Add(busyWait).After(deadline) {
			return nil, err
		}
		time.Sleep(busyWait)
	}
}
