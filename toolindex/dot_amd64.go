//go:build !purego

package toolindex

import "golang.org/x/sys/cpu"

//go:noescape
func dotInt16AVX2(a *int16, q *float32, n int) float32

var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotInt16 returns Σ a[i]·q[i]; len(a) == len(q), a multiple of 32.
func dotInt16(a []int16, q []float32) float32 {
	if hasAVX2 && len(a) > 0 {
		_ = q[len(a)-1]
		return dotInt16AVX2(&a[0], &q[0], len(a))
	}
	return dotInt16Go(a, q)
}
