//go:build !purego

package encoder

import "golang.org/x/sys/cpu"

// useAVX2 reports whether the assembly kernels can run: they use AVX2
// registers and fused multiply-add.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dot4x3AVX2(c *[12]float32, a *float32, lda int, w *float32, ldw int, k int)

//go:noescape
func dot4x1AVX2(c *[4]float32, a *float32, lda int, w *float32, k int)

// dot4x3 sets c[3r+j] to Σₓ a[r·lda+x]·w[j·ldw+x] for r < 4, j < 3, x < k.
func dot4x3(c *[12]float32, a []float32, lda int, w []float32, ldw, k int) {
	if useAVX2 && k%8 == 0 && k > 0 {
		_ = a[3*lda+k-1]
		_ = w[2*ldw+k-1]
		dot4x3AVX2(c, &a[0], lda, &w[0], ldw, k)
		return
	}
	dot4x3Go(c, a, lda, w, ldw, k)
}

// dot4x1 sets c[r] to Σₓ a[r·lda+x]·w[x] for r < 4, x < k.
func dot4x1(c *[4]float32, a []float32, lda int, w []float32, k int) {
	if useAVX2 && k%8 == 0 && k > 0 {
		_ = a[3*lda+k-1]
		_ = w[k-1]
		dot4x1AVX2(c, &a[0], lda, &w[0], k)
		return
	}
	dot4x1Go(c, a, lda, w, k)
}
