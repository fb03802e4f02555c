//go:build !amd64 || purego

package toolindex

// dotInt8 returns Σ a[i]·q[i]; len(a) == len(q), a multiple of 32.
func dotInt8(a []int8, q []float32) float32 { return dotInt8Go(a, q) }
