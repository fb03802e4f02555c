//go:build !purego

package toolindex

import (
	"math/rand/v2"
	"testing"
)

// The AVX-512 kernels give the AVX2 kernels' scores bit for bit (dense
// int16 and int8 blocks, sparse blocks of every density), so that which
// one a processor runs changes no ranking.
func TestAVX512KernelsMatchAVX2(t *testing.T) {
	if !hasAVX512 {
		t.Logf("this processor has no AVX-512 VBMI2: only the AVX2 kernels run, nothing to compare (AVX2 %v)", hasAVX2)
		return
	}
	defer func() { hasAVX512 = true }()
	r := rand.New(rand.NewPCG(11, 12))
	for _, dim := range []int{1, 40, 512, 1024} {
		for _, blockDensity := range []int{1, 4, 30} {
			dense, sp := sparseBlock(r, dim, blockDensity)
			blk8 := make([]int8, len(dense))
			for i, c := range dense {
				blk8[i] = int8(c >> 8)
			}
			for _, density := range []int{1, 3, 10} {
				var offs []int32
				var vals []float32
				for d := range dim {
					if r.IntN(density) == 0 {
						offs = append(offs, int32(d*blockSlots))
						vals = append(vals, float32(r.NormFloat64()))
					}
				}
				if len(offs) == 0 {
					continue
				}
				var want, want8, wantSp, got, got8, gotSp [blockSlots]float32
				hasAVX512 = false
				blockDots(dense, offs, vals, &want)
				blockDots8(blk8, offs, vals, &want8)
				if sp.dense == nil {
					sparseDots(&sp, offs, vals, &wantSp)
				}
				hasAVX512 = true
				blockDots(dense, offs, vals, &got)
				blockDots8(blk8, offs, vals, &got8)
				if sp.dense == nil {
					sparseDots(&sp, offs, vals, &gotSp)
				}
				if got != want {
					t.Fatalf("dim %d, %d dimensions: blockDotsAVX512 = %v\nblockDotsAVX2 %v", dim, len(offs), got, want)
				}
				if got8 != want8 {
					t.Fatalf("dim %d, %d dimensions: blockDots8AVX512 = %v\nblockDots8AVX2 %v", dim, len(offs), got8, want8)
				}
				if gotSp != wantSp {
					t.Fatalf("dim %d, block 1/%d, %d dimensions: sparseDotsAVX512 = %v\nsparseDotsAVX2 %v", dim, blockDensity, len(offs), gotSp, wantSp)
				}
				if sp.dense == nil && gotSp != want {
					t.Fatalf("dim %d, block 1/%d, %d dimensions: sparseDotsAVX512 = %v\ndense %v", dim, blockDensity, len(offs), gotSp, want)
				}
			}
		}
	}
}

// BenchmarkKernels scores one block of 64 tools with each kernel: an
// n-gram query (100 of 1,024 dimensions) on a sparse block (a 30th of the
// codes set) and on the same block dense, and a USE query (all 512
// dimensions) on an int8 block.
func BenchmarkKernels(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	dense, sp := sparseBlock(r, 1024, 30)
	var offs []int32
	var vals []float32
	for d := 0; d < 1024; d += 10 {
		offs = append(offs, int32(d*blockSlots))
		vals = append(vals, float32(r.NormFloat64()))
	}
	blk8 := make([]int8, 512*blockSlots)
	for i := range blk8 {
		blk8[i] = int8(r.IntN(255) - 127)
	}
	var offs8 []int32
	var vals8 []float32
	for d := range 512 {
		offs8 = append(offs8, int32(d*blockSlots))
		vals8 = append(vals8, float32(r.NormFloat64()))
	}
	avx512 := hasAVX512
	defer func() { hasAVX512 = avx512 }()
	for _, k := range []struct {
		name string
		on   bool
	}{{"avx2", false}, {"avx512", true}} {
		if k.on && !avx512 {
			continue
		}
		hasAVX512 = k.on
		var out [blockSlots]float32
		b.Run("sparse/"+k.name, func(b *testing.B) {
			for b.Loop() {
				sparseDots(&sp, offs, vals, &out)
			}
		})
		b.Run("dense16/"+k.name, func(b *testing.B) {
			for b.Loop() {
				blockDots(dense, offs, vals, &out)
			}
		})
		b.Run("dense8/"+k.name, func(b *testing.B) {
			for b.Loop() {
				blockDots8(blk8, offs8, vals8, &out)
			}
		})
	}
}
