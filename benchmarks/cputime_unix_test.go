//go:build unix

package benchmarks_test

import "syscall"

// cpuSeconds returns the CPU time (user and system) the process has used:
// on a machine shared with other work, CPU time per step says what a step
// costs a gateway that is busy.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
