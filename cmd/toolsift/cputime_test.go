//go:build unix

package main

import "syscall"

// cpuSeconds returns the CPU time (user and system) the process has used:
// on a machine shared with other work, CPU per operation says what it costs.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
