//go:build !unix

package benchmarks_test

// cpuSeconds is 0 where getrusage is not available.
func cpuSeconds() float64 { return 0 }
