package encoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// availableKernels lists the kernels this processor runs, the portable one
// first, the fastest (bestKernel) last.
func availableKernels() []useKernel {
	ks := []useKernel{kernelGo}
	for k := kernelGo + 1; k <= bestKernel(); k++ {
		ks = append(ks, k)
	}
	return ks
}

// withKernel runs f with useKern set to k.
func withKernel(t testing.TB, k useKernel, f func()) {
	old := useKern
	useKern = k
	defer func() { useKern = old }()
	f()
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestGemmKernels compares every kernel with a float64 computation on
// random shapes: rows from 1 to 30 (every block size and remainder), k
// around multiples of the unrolling, columns of one to six panels,
// strides wider than the rows, B in float32 and in float16, with and
// without bias, residual and ReLU.
func TestGemmKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, kern := range availableKernels() {
		t.Run(kern.String(), func(t *testing.T) {
			for _, k := range []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 63, 64, 65, 100, 256} {
				for n := 1; n <= 30; n++ {
					if raceOn && !sampledRows(n) {
						continue
					}
					for _, half := range []bool{false, true} {
						np := 1 + r.IntN(6)
						m := np*usePanel - r.IntN(usePanel) // the last panel padded
						testGemm(t, r, kern, n, k, m, half, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0)
					}
				}
			}
		})
	}
}

// sampledRows says whether a kernel test under -race (raceOn) checks
// products of n rows: every n up to 12, which gives each kernel of a block
// of 1 to 12 rows its own case, and a few that split into blocks (13, 24,
// 25, 30); without -race every n from 1 to 30.
func sampledRows(n int) bool {
	return n <= 12 || n == 13 || n == 24 || n == 25 || n == 30
}

// randHalf returns n random float16 values between 2⁻⁵ and 2⁶ in
// magnitude, and the same in float32.
func randHalf(r *rand.Rand, n int) ([]uint16, []float32) {
	h, f := make([]uint16, n), make([]float32, n)
	for i := range h {
		h[i] = uint16(r.IntN(2))<<15 | uint16(10+r.IntN(11))<<10 | uint16(r.IntN(1024))
		f[i] = f16to32(h[i])
	}
	return h, f
}

func testGemm(t *testing.T, r *rand.Rand, kern useKernel, n, k, m int, half, withBias, withAdd, relu bool) {
	t.Helper()
	np := (m + usePanel - 1) / usePanel
	wide := np * usePanel
	lda, ldc, ldadd := k+r.IntN(3), wide+r.IntN(3)*4, wide+r.IntN(5)
	a := randSlice(r, n*lda)
	var bsrc []float32
	var b *usePanels
	if half {
		var h []uint16
		h, bsrc = randHalf(r, k*m)
		b = newHalfPanels(h, k, m)
	} else {
		bsrc = randSlice(r, k*m)
		b = newPanels(bsrc, k, m)
	}
	var bias, add []float32
	if withBias {
		bias = randSlice(r, wide)
	}
	if withAdd {
		add = randSlice(r, n*ldadd)
	}
	c := randSlice(r, n*ldc) // the gaps between rows must stay as they are
	orig := append([]float32(nil), c...)
	// A block of panels starting past the first, when there are several.
	p0 := r.IntN(np)
	withKernel(t, kern, func() { gemm(c, ldc, a, lda, n, b, p0, np, bias, add, ldadd, relu) })
	for i := range n {
		for j := range ldc {
			got := c[i*ldc+j]
			if j < p0*usePanel || j >= wide {
				if got != orig[i*ldc+j] {
					t.Fatalf("%v n=%d k=%d m=%d: c[%d][%d] outside the block changed", kern, n, k, m, i, j)
				}
				continue
			}
			var want, mag float64
			if bias != nil {
				want, mag = float64(bias[j]), math.Abs(float64(bias[j]))
			}
			for x := range k {
				var bv float64
				if j < m {
					bv = float64(bsrc[x*m+j])
				}
				want += float64(a[i*lda+x]) * bv
				mag += math.Abs(float64(a[i*lda+x]) * bv)
			}
			if add != nil {
				want += float64(add[i*ldadd+j])
				mag += math.Abs(float64(add[i*ldadd+j]))
			}
			if relu {
				want = max(want, 0)
			}
			if math.Abs(float64(got)-want) > 1e-5*(mag+1) {
				t.Fatalf("%v n=%d k=%d m=%d half=%v bias=%v add=%v relu=%v: c[%d][%d] = %v, want %v",
					kern, n, k, m, half, withBias, withAdd, relu, i, j, got, want)
			}
		}
	}
}

// BenchmarkGemm measures each kernel on one goroutine, on the shapes of
// the model's products for a 128-piece text and for a 5-piece query.
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct{ n, k, m int }{{128, 512, 1536}, {128, 1536, 512}, {128, 256, 768}, {5, 512, 1536}, {5, 1536, 512}} {
		a := randSlice(r, s.n*s.k)
		h, _ := randHalf(r, s.k*s.m)
		w := newHalfPanels(h, s.k, s.m) // as the model's weights
		bias := randSlice(r, s.m)
		c := make([]float32, s.n*s.m)
		for _, kern := range availableKernels() {
			b.Run(fmt.Sprintf("%dx%dx%d/%v", s.n, s.k, s.m, kern), func(b *testing.B) {
				withKernel(b, kern, func() {
					for b.Loop() {
						useMatMul(c, a, s.n, w, bias, nil, false, 1)
					}
				})
				b.ReportMetric(2*float64(s.n*s.k*s.m)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestGemmArgsLayout checks the offsets of gemmArgs's fields that the
// assembly kernels use (internal/usekgen's offA and the rest).
func TestGemmArgsLayout(t *testing.T) {
	var g gemmArgs
	got := []uintptr{
		unsafe.Offsetof(g.a), unsafe.Offsetof(g.lda), unsafe.Offsetof(g.b), unsafe.Offsetof(g.bs),
		unsafe.Offsetof(g.k), unsafe.Offsetof(g.c), unsafe.Offsetof(g.ldc), unsafe.Offsetof(g.bias),
		unsafe.Offsetof(g.add), unsafe.Offsetof(g.ldadd), unsafe.Offsetof(g.relu),
	}
	for i, off := range got {
		if off != uintptr(8*i) {
			t.Errorf("field %d of gemmArgs at offset %d, want %d", i, off, 8*i)
		}
	}
}
