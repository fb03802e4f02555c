//go:build unix

package encoder_test

import "syscall"

// cpuSeconds returns the CPU time (user and system) the process has used:
// on a machine shared with other work, wall-clock benchmarks say little, and
// CPU time divided by the cores used is what the work costs.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
