//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own and returns a
// function that kills whatever is left in that group: servers started
// through npx or a shell leave grandchildren behind otherwise.
func setProcessGroup(cmd *exec.Cmd) func() {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}
