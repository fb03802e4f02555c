//go:build !amd64 || purego

package toolindex

// blockDots sets out[j] to Σ_k vals[k]·blk[offs[k]+j] for the blockSlots
// slots j of a block (see the amd64 version).
func blockDots(blk []int16, offs []int32, vals []float32, out *[blockSlots]float32) {
	blockDotsGo(blk, offs, vals, out)
}

// blockDots8 is blockDots over int8 codes.
func blockDots8(blk []int8, offs []int32, vals []float32, out *[blockSlots]float32) {
	blockDotsGo(blk, offs, vals, out)
}

// sparseDots is blockDots over a sparse block (see the amd64 version).
func sparseDots(bl *block16, offs []int32, vals []float32, out *[blockSlots]float32) {
	if bl.mask == nil {
		*out = [blockSlots]float32{}
		return
	}
	sparseDotsGo(bl, offs, vals, out)
}
