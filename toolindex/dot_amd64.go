//go:build !purego

package toolindex

import "golang.org/x/sys/cpu"

//go:noescape
func dotInt8AVX2(a *int8, q *float32, n int) float32

var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotInt8 returns Σ a[i]·q[i]; len(a) == len(q), a multiple of 32.
func dotInt8(a []int8, q []float32) float32 {
	if hasAVX2 && len(a) > 0 {
		_ = q[len(a)-1]
		return dotInt8AVX2(&a[0], &q[0], len(a))
	}
	return dotInt8Go(a, q)
}
