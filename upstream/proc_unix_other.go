//go:build unix && !linux

package upstream

import "syscall"

// procAttr puts a server in its own process group.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
