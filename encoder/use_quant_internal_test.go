package encoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// TestGemmQKernels checks the int16 path on random shapes, with every
// kernel the processor runs: each against the Go one to the bit (the same
// exact int32 sums, scaled by the same float operations in the same order:
// AVX-512's VPDPWSSD and VPMADDWD give AVX2's floats), and all against a
// float64 product of the unquantised matrices within the quantisation's
// error. Rows 1 to 30 (every block size and remainder), k even, around
// multiples of the unrolling and the model's, columns of one to six
// panels (each count for the small k, so that every block shape of every
// kernel runs), a block starting past the first panel, with and without
// bias, residual and ReLU, and rows or columns of zeros.
func TestGemmQKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{16, 32, 48, 64, 80, 256, 512, 1536} {
		for n := 1; n <= 30; n++ {
			if raceOn && !sampledRows(n) {
				continue
			}
			counts := []int{1 + r.IntN(6)}
			if k <= 80 {
				counts = []int{1, 2, 3, 4, 5, 6}
			}
			for _, np := range counts {
				m := np*usePanel - r.IntN(usePanel)
				testGemmQ(t, r, n, k, m, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0)
			}
		}
	}
}

func testGemmQ(t *testing.T, r *rand.Rand, n, k, m int, withBias, withAdd, relu bool) {
	t.Helper()
	np := (m + usePanel - 1) / usePanel
	wide := np * usePanel
	h, bsrc := randHalf(r, k*m)
	if r.IntN(4) == 0 { // a column of zeros
		j := r.IntN(m)
		for x := range k {
			h[x*m+j], bsrc[x*m+j] = 0, 0
		}
	}
	b := newHalfPanels(h, k, m)
	a := randSlice(r, n*k)
	if r.IntN(4) == 0 { // a row of zeros
		clear(a[r.IntN(n)*k:][:k])
	}
	var bias, add []float32
	if withBias {
		bias = randSlice(r, wide)
	}
	if withAdd {
		add = randSlice(r, n*wide)
	}
	qa := make([]int16, n*k)
	qs := make([]float32, n)
	// Quantised once: the kernels' row statistics differ in rounding
	// (TestQuantizeRows checks each).
	withKernel(t, kernelGo, func() { quantizeRows(qa, k, qs, a, k, n, k) })
	// A block of panels starting past the first, when there are several
	// (leaving at least 4 when there are, for the kernels of 4 panels);
	// C's columns before it must keep their values.
	p0 := r.IntN(np)
	if np >= 4 {
		p0 = r.IntN(np - 3)
	}
	orig := randSlice(r, n*wide)
	var results [][]float32
	for _, kern := range availableKernels() {
		c := append([]float32(nil), orig...)
		withKernel(t, kern, func() { gemmQ(c, wide, qa, k, qs, n, b, p0, np, bias, add, wide, relu) })
		results = append(results, c)
	}
	kerns := availableKernels()
	for ki := 1; ki < len(kerns); ki++ {
		for i, v := range results[ki] {
			if g := results[0][i]; math.Float32bits(v) != math.Float32bits(g) {
				t.Fatalf("%v n=%d k=%d m=%d p0=%d bias=%v add=%v relu=%v: c[%d][%d] = %v (%#x), the Go kernel's %v (%#x)",
					kerns[ki], n, k, m, p0, withBias, withAdd, relu, i/wide, i%wide, v, math.Float32bits(v), g, math.Float32bits(g))
			}
		}
	}
	for i := range n {
		var na float64
		for x := range k {
			na += float64(a[i*k+x]) * float64(a[i*k+x])
		}
		for j := range wide {
			if j < p0*usePanel {
				for ki, c := range results {
					if c[i*wide+j] != orig[i*wide+j] {
						t.Fatalf("%v n=%d k=%d m=%d p0=%d: c[%d][%d] outside the block changed", kerns[ki], n, k, m, p0, i, j)
					}
				}
				continue
			}
			var want, nb float64
			if bias != nil {
				want = float64(bias[j])
			}
			for x := range k {
				var bv float64
				if j < m {
					bv = float64(bsrc[x*m+j])
				}
				want += float64(a[i*k+x]) * bv
				nb += bv * bv
			}
			if add != nil {
				want += float64(add[i*wide+j])
			}
			if relu {
				want = max(want, 0)
			}
			// Each factor is off by at most half a unit, a unit being
			// at most 1/11 000 of its vector's norm (k ≤ 1,536 values
			// within useQNorm).
			tol := 4e-4*math.Sqrt(na*nb) + 1e-5*(math.Abs(want)+1)
			for ki, c := range results {
				got := float64(c[i*wide+j])
				if math.Abs(got-want) > tol {
					t.Fatalf("%v n=%d k=%d m=%d bias=%v add=%v relu=%v: c[%d][%d] = %v, want %v ± %.2g",
						kerns[ki], n, k, m, withBias, withAdd, relu, i, j, got, want, tol)
				}
			}
		}
	}
}

// TestQuantizeRows checks the scales (no value beyond ±32767, an L2 norm
// of at most useQNorm + ½√k) and the rounding, with every kernel, on rows
// with outliers, of zeros and of equal values.
func TestQuantizeRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{16, 256, 512, 1536} {
		for _, kind := range []string{"normal", "outlier", "zeros", "equal"} {
			a := randSlice(r, k)
			switch kind {
			case "outlier":
				a[r.IntN(k)] = 1e4
			case "zeros":
				clear(a)
			case "equal":
				for i := range a {
					a[i] = -3
				}
			}
			for _, kern := range availableKernels() {
				t.Run(fmt.Sprintf("%d/%s/%v", k, kind, kern), func(t *testing.T) {
					q := make([]int16, k)
					s := make([]float32, 1)
					withKernel(t, kern, func() { quantizeRows(q, k, s, a, k, 1, k) })
					var norm float64
					for i, v := range q {
						norm += float64(v) * float64(v)
						if v == -32768 {
							t.Fatalf("q[%d] = -32768", i)
						}
						want := math.RoundToEven(float64(a[i]) / float64(s[0]))
						if s[0] == 0 {
							want = 0
						}
						if math.Abs(float64(v)-want) > 1 {
							t.Fatalf("q[%d] = %d, want %v (a = %v, scale %v)", i, v, want, a[i], s[0])
						}
					}
					if math.Sqrt(norm) > useQNorm+0.5*math.Sqrt(float64(k)) {
						t.Fatalf("norm %v > %v", math.Sqrt(norm), useQNorm)
					}
				})
			}
		}
	}
}

// TestGemmQArgsLayout checks the offsets of gemmQArgs's fields that the
// int16 kernels use (internal/usekgen's offQA and the rest).
func TestGemmQArgsLayout(t *testing.T) {
	var g gemmQArgs
	got := []uintptr{
		unsafe.Offsetof(g.a), unsafe.Offsetof(g.lda), unsafe.Offsetof(g.b), unsafe.Offsetof(g.k2),
		unsafe.Offsetof(g.c), unsafe.Offsetof(g.ldc), unsafe.Offsetof(g.bias), unsafe.Offsetof(g.add),
		unsafe.Offsetof(g.ldadd), unsafe.Offsetof(g.relu), unsafe.Offsetof(g.cscale), unsafe.Offsetof(g.rscale),
	}
	for i, off := range got {
		if off != uintptr(8*i) {
			t.Errorf("field %d of gemmQArgs at offset %d, want %d", i, off, 8*i)
		}
	}
}

// BenchmarkGemmQ measures the int16 products on one goroutine, as
// EmbedQueries runs them (useMatMulQ: the rows quantised, then the tiles),
// with each kernel the processor runs, on the shapes of a 25-piece query's
// products, of 8 such queries in one pass, of a 5-piece query and of the
// pooled last product; and the float16 weights' product (useMatMul, Embed's
// path) on the fastest kernel beside them. GMAC/s is 10⁹ multiply-adds a
// second over all calls, best-GMAC/s that of the fastest call.
func BenchmarkGemmQ(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct{ n, k, m int }{{25, 512, 1536}, {25, 1536, 512}, {25, 256, 768}, {200, 512, 1536}, {5, 512, 1536}, {1, 1536, 512}} {
		a := randSlice(r, s.n*s.k)
		h, _ := randHalf(r, s.k*s.m)
		w := newHalfPanels(h, s.k, s.m) // as the model's weights
		w.quant()
		bias := randSlice(r, s.m)
		c := make([]float32, s.n*s.m)
		qa := make([]int16, s.n*((s.k+1)&^1))
		qs := make([]float32, s.n)
		run := func(name string, kern useKernel, f func()) {
			b.Run(fmt.Sprintf("%dx%dx%d/%s", s.n, s.k, s.m, name), func(b *testing.B) {
				withKernel(b, kern, func() {
					f() // the weights in cache as a pass would have them
					best := math.Inf(1)
					for b.Loop() {
						start := time.Now()
						f()
						best = min(best, time.Since(start).Seconds())
					}
					macs := float64(s.n * s.k * s.m)
					b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
					b.ReportMetric(macs/best/1e9, "best-GMAC/s")
				})
			})
		}
		for _, kern := range availableKernels()[1:] {
			run(kern.String(), kern, func() { useMatMulQ(c, a, s.n, w, bias, nil, false, 1, qa, qs) })
		}
		run("float16-"+bestKernel().String(), bestKernel(), func() { useMatMul(c, a, s.n, w, bias, nil, false, 1) })
	}
}
