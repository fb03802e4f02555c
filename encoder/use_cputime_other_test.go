//go:build !unix

package encoder_test

// cpuSeconds is not measured on this platform.
func cpuSeconds() float64 { return 0 }
