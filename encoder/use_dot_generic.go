package encoder

// dot4x4 computes the 4×4 dot products of a block; see dot4x4Go.
func dot4x4(c *[16]float32, a0, a1, a2, a3, w0, w1, w2, w3 []float32) {
	dot4x4Go(c, a0, a1, a2, a3, w0, w1, w2, w3)
}
