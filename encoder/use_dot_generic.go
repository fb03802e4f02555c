//go:build !amd64 || purego

package encoder

// dot4x3 sets c[3r+j] to Σₓ a[r·lda+x]·w[j·ldw+x] for r < 4, j < 3, x < k.
func dot4x3(c *[12]float32, a []float32, lda int, w []float32, ldw, k int) {
	dot4x3Go(c, a, lda, w, ldw, k)
}

// dot4x1 sets c[r] to Σₓ a[r·lda+x]·w[x] for r < 4, x < k.
func dot4x1(c *[4]float32, a []float32, lda int, w []float32, k int) {
	dot4x1Go(c, a, lda, w, k)
}
