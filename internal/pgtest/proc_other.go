//go:build unix && !linux

package pgtest

import "syscall"

// sysProcAttr runs the cluster's binaries as cred (nil: this user).
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}

// memDir returns "": the cluster's folder stays in the temporary folder.
func memDir() string { return "" }
