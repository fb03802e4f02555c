//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own and returns a
// function that kills whatever is left in that group: servers started
// through npx or a shell leave grandchildren behind otherwise. On Linux the
// child is also killed when the host dies (see procAttr).
func setProcessGroup(cmd *exec.Cmd) func() {
	cmd.SysProcAttr = procAttr()
	return func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}
