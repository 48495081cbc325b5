//go:build !linux

package privsep

import "syscall"

// procAttr starts a worker with cred. Where the kernel cannot kill it with root, the worker
// ends when its link reads the end of the file.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setsid: true}
}
