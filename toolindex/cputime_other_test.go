//go:build !unix

package toolindex

// cpuSeconds is 0 where getrusage is not available.
func cpuSeconds() float64 { return 0 }
