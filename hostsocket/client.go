package hostsocket

import (
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// Call sends req to the daemon at path and returns its answer, all before deadline.
func Call(path string, req Request, deadline time.Time) (Answer, error) {
	d := net.Dialer{Deadline: deadline}
	conn, err := d.Dial("unix", path)
	if err != nil {
		return Answer{}, fmt.Errorf("reach coworkbridge's daemon at %s: %w", path, err)
	}
	c := conn.(*net.UnixConn)
	defer c.Close()
	_ = c.SetDeadline(deadline)
	req.V = Version
	data, err := json.Marshal(req)
	if err != nil {
		return Answer{}, fmt.Errorf("encode the request: %w", err)
	}
	_, werr := c.Write(data)
	_ = c.CloseWrite()
	var a Answer
	// A daemon that refused the request unread (too large) answered before closing: its answer
	// is there to read even when the write failed.
	if err := readJSON(c, maxAnswer, &a); err != nil {
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
