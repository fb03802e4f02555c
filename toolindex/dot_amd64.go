//go:build !purego

package toolindex

import "golang.org/x/sys/cpu"

//go:noescape
func blockDotsAVX2(blk *int16, offs *int32, vals *float32, n int, out *[blockSlots]float32)

var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func blockDotsAVX512(blk *int16, offs *int32, vals *float32, n int, out *[blockSlots]float32)

//go:noescape
func blockDots8AVX512(blk *int8, offs *int32, vals *float32, n int, out *[blockSlots]float32)

//go:noescape
func sparseDotsAVX512(mask *uint64, start *uint16, code *int16, offs *int32, vals *float32, n int, out *[blockSlots]float32)

// hasAVX512 runs the AVX-512 kernels (16 slots a register, the AVX2
// kernels' scores bit for bit: the same fused multiply-adds per slot, in
// the same order) where the processor has them; the sparse one needs
// VBMI2's VPEXPANDW, and the operating system must save the registers,
// which golang.org/x/sys/cpu checks. Tests switch it off to compare.
var hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VBMI2

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
		if hasAVX512 {
			blockDotsAVX512(&blk[0], &offs[0], &vals[0], len(offs), out)
			return
		}
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
		if hasAVX512 {
			blockDots8AVX512(&blk[0], &offs[0], &vals[0], len(offs), out)
			return
		}
		blockDots8AVX2(&blk[0], &offs[0], &vals[0], len(offs), out)
		return
	}
	blockDotsGo(blk, offs, vals, out)
}

//go:noescape
func sparseDotsAVX2(mask *uint64, start *uint16, code *int16, offs *int32, vals *float32, n int, lut *[256][16]byte, out *[blockSlots]float32)

// expandLUT[m] is the byte shuffle that moves the first popcount(m) of
// eight packed int16 codes to the places of m's set bits, zeros elsewhere.
var expandLUT = func() (lut [256][16]byte) {
	for m := range lut {
		k := 0
		for i := range 8 {
			if m>>i&1 == 0 {
				lut[m][2*i], lut[m][2*i+1] = 0x80, 0x80 // PSHUFB writes zero
				continue
			}
			lut[m][2*i], lut[m][2*i+1] = byte(2*k), byte(2*k+1)
			k++
		}
	}
	return lut
}()

// sparseDots is blockDots over a sparse block. The kernel expands each
// eight slots' codes of a column to a vector, zeros included, and adds
// them as blockDotsAVX2 does, so the scores are the dense block's.
func sparseDots(bl *block16, offs []int32, vals []float32, out *[blockSlots]float32) {
	if bl.mask == nil || len(offs) == 0 {
		*out = [blockSlots]float32{}
		return
	}
	if hasAVX2 {
		_ = vals[len(offs)-1]
		// Every offset is a dimension times blockSlots, below dim ×
		// blockSlots: mask and start have dim entries, and each
		// column's codes are followed by at least sparsePad codes. The
		// kernel does not check.
		if len(bl.start) != len(bl.mask) || len(bl.code) < sparsePad || int(offs[len(offs)-1]) >= len(bl.mask)*blockSlots {
			panic("toolindex: sparse block and query disagree")
		}
		if hasAVX512 {
			sparseDotsAVX512(&bl.mask[0], &bl.start[0], &bl.code[0], &offs[0], &vals[0], len(offs), out)
			return
		}
		sparseDotsAVX2(&bl.mask[0], &bl.start[0], &bl.code[0], &offs[0], &vals[0], len(offs), &expandLUT, out)
		return
	}
	sparseDotsGo(bl, offs, vals, out)
}
