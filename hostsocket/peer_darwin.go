package hostsocket

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerOf asks the kernel for the peer's credentials (getpeereid's source) and process id.
func peerOf(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var cred *unix.Xucred
	var pid int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if serr == nil {
			pid, _ = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		}
	}); err != nil {
		return Peer{}, err
	}
	if serr != nil {
		return Peer{}, serr
	}
	p := Peer{UID: cred.Uid, PID: int32(pid)}
	if cred.Ngroups > 0 {
		p.GID = cred.Groups[0]
	}
	return p, nil
}
