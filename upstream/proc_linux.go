//go:build linux

package upstream

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// procAttr puts a server in its own process group and asks the kernel to
// SIGKILL it when its parent dies (Pdeathsig), so that servers that ignore
// EOF on stdin do not outlive a host that was SIGKILLed. Only the server
// itself gets the signal; its own children are its business, or the
// process group kill's when the Hub stops it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Pdeathsig fires when the *thread* that forked the child exits, not the
// process. The Go runtime ends a thread when a goroutine that locked it
// exits without unlocking, so a child started from an arbitrary goroutine
// could be killed at a random moment. Children are therefore started from
// one goroutine that locks its thread and never returns: that thread lives
// as long as the process.
var starter struct {
	once sync.Once
	reqs chan startReq
}

type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startProcess starts cmd from the starter thread.
func startProcess(cmd *exec.Cmd) error {
	starter.once.Do(func() {
		starter.reqs = make(chan startReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not exit or be reused
			for r := range starter.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starter.reqs <- startReq{cmd, done}
	return <-done
}
