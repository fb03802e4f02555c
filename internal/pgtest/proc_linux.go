package pgtest

import "syscall"

// sysProcAttr runs the cluster's binaries as cred (nil: this user); the
// server gets SIGQUIT (PostgreSQL's immediate shutdown) if the test binary
// dies first.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}
