package upstream_test

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithTest kills cmd if the test binary dies first (a panic on timeout
// skips cleanups).
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func lockOSThread() { runtime.LockOSThread() }
