package privsep

import "syscall"

// procAttr starts a worker with cred, killed with root: a worker never outlives the daemon that
// judges for it.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setsid: true, Pdeathsig: syscall.SIGKILL}
}
