//go:build !purego

package toolindex

import "golang.org/x/sys/cpu"

//go:noescape
func blockDotsAVX2(blk *int16, offs *int32, vals *float32, n int, out *[blockSlots]float32)

var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// blockDots sets out[j] to Σ_k vals[k]·blk[offs[k]+j] for the blockSlots
// slots j of a block: the dot products of the query (its non-zero values
// vals at the column offsets offs) with the block's vectors. Every offset
// is at most len(blk)-blockSlots.
func blockDots(blk []int16, offs []int32, vals []float32, out *[blockSlots]float32) {
	if hasAVX2 && len(offs) > 0 {
		_ = vals[len(offs)-1]
		// The offsets are the caller's dimensions times blockSlots, all
		// below dim×blockSlots = len(blk): the kernel does not check.
		_ = blk[len(blk)-1]
		blockDotsAVX2(&blk[0], &offs[0], &vals[0], len(offs), out)
		return
	}
	blockDotsGo(blk, offs, vals, out)
}

//go:noescape
func blockDots8AVX2(blk *int8, offs *int32, vals *float32, n int, out *[blockSlots]float32)

// blockDots8 is blockDots over int8 codes.
func blockDots8(blk []int8, offs []int32, vals []float32, out *[blockSlots]float32) {
	if hasAVX2 && len(offs) > 0 {
		_ = vals[len(offs)-1]
		_ = blk[len(blk)-1]
		blockDots8AVX2(&blk[0], &offs[0], &vals[0], len(offs), out)
		return
	}
	blockDotsGo(blk, offs, vals, out)
}
