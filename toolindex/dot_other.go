//go:build !amd64 || purego

package toolindex

// dotInt16 returns Σ a[i]·q[i]; len(a) == len(q), a multiple of 32.
func dotInt16(a []int16, q []float32) float32 { return dotInt16Go(a, q) }
