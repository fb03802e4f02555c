//go:build unix

package toolindex

import "syscall"

// cpuSeconds returns the CPU time (user and system) the process has used:
// on a machine shared with other work, CPU time says more than wall-clock
// time about what a scan costs.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
