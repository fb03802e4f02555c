package encoder

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// usePanel is the width of a panel of a packed matrix: one AVX-512
// register of float32, two of AVX2.
const usePanel = 16

// usePanels is a matrix B of k rows and m columns packed for the kernels:
// in panels of usePanel columns, panel p holding B[x][16p+j] at
// data[p·16k + 16x + j], the last panel padded with zero columns. A weight
// matrix, whose outputs are its columns, is stored so; a step of a kernel
// reads one contiguous row of 16 of each panel it computes.
//
// The weights, float16 in the model, stay so in half for the assembly
// kernels, which widen them as they load them (exactly: every float16 is a
// float32): half the memory and half the bytes a product reads. data, in
// float32, is then made on first use by the portable kernel.
type usePanels struct {
	k, m  int
	data  []float32
	half  []uint16
	widen sync.Once
	q     *useQuantPanels // int16, made on first use by quant
	qOnce sync.Once
}

// floats returns the panels in float32.
func (b *usePanels) floats() []float32 {
	if b.half != nil {
		b.widen.Do(func() {
			data := make([]float32, len(b.half))
			for i, h := range b.half {
				data[i] = f16to32(h)
			}
			b.data = data
		})
	}
	return b.data
}

// panels returns the number of panels of b.
func (b *usePanels) panels() int { return (b.m + usePanel - 1) / usePanel }

// packPanels packs the k×m matrix whose element (x, j) is src[x·ld+j]
// (row-major, ld ≥ m) into dst, which must hold panels·16·k values.
func packPanels[T float32 | uint16](dst, src []T, ld, k, m int) {
	np := (m + usePanel - 1) / usePanel
	dst = dst[:np*usePanel*k]
	for p := range np {
		pd := dst[p*usePanel*k : (p+1)*usePanel*k]
		c0 := p * usePanel
		w := min(usePanel, m-c0)
		for x := range k {
			row := pd[x*usePanel : (x+1)*usePanel]
			copy(row, src[x*ld+c0:x*ld+c0+w])
			clear(row[w:])
		}
	}
}

// newPanels packs the row-major k×m matrix src.
func newPanels(src []float32, k, m int) *usePanels {
	b := &usePanels{k: k, m: m, data: make([]float32, (m+usePanel-1)/usePanel*usePanel*k)}
	packPanels(b.data, src, m, k, m)
	return b
}

// newHalfPanels packs the row-major k×m matrix src of float16 values: in
// float16 when an assembly kernel will use them, else in float32.
func newHalfPanels(src []uint16, k, m int) *usePanels {
	b := &usePanels{k: k, m: m, half: make([]uint16, (m+usePanel-1)/usePanel*usePanel*k)}
	packPanels(b.half, src, m, k, m)
	if bestKernel() == kernelGo {
		b.floats()
		b.half = nil
	}
	return b
}

// gemmArgs are the arguments of a kernel (pointers and strides in bytes),
// in a struct whose offsets internal/usekgen knows: C[r][j] =
// bias[j] + Σₓ A[r][x]·B[x][j] (+ add[r][j]) (clamped at zero when relu is
// 1) for the rows of the kernel and the 16·panels columns from b.
type gemmArgs struct {
	a     *float32       // A's first row
	lda   int            // bytes from a row of A to the next
	b     unsafe.Pointer // the first panel, float32 or float16
	bs    int            // bytes from a panel to the next
	k     int            // length of the products
	c     *float32       // C's first row, at the block's first column
	ldc   int            // bytes from a row of C to the next
	bias  *float32       // the bias of the block's columns, or nil for zero
	add   *float32       // what to add to C's first row, or nil
	ldadd int            // bytes from a row of add to the next
	relu  int            // 1: clamp negatives to zero
}

// useKernel names an implementation of the kernels.
type useKernel int

const (
	kernelGo         useKernel = iota // portable Go
	kernelAVX2                        // AVX2 and FMA assembly
	kernelAVX512                      // AVX-512 (F) assembly; int16: VPMADDWD (BW)
	kernelAVX512VNNI                  // kernelAVX512's; int16: VPDPWSSD (VNNI)
)

func (k useKernel) String() string {
	switch k {
	case kernelGo:
		return "go"
	case kernelAVX2:
		return "avx2"
	case kernelAVX512:
		return "avx512"
	case kernelAVX512VNNI:
		return "avx512vnni"
	}
	return fmt.Sprintf("useKernel(%d)", int(k))
}

// useKern is the kernel in use: the fastest the processor runs (see
// bestKernel), changed only by tests.
var useKern = bestKernel()

// gemm sets c[i·ldc+j] = bias[j] + Σₓ a[i·lda+x]·B[x][j] (+ add[i·ldadd+j])
// (clamped at zero when relu is set) for i < n and the columns j of panels
// p0..p1 of b (whole panels: c, bias and add must be as wide as the last
// panel, padding included). bias and add may be nil.
func gemm(c []float32, ldc int, a []float32, lda, n int, b *usePanels, p0, p1 int, bias, add []float32, ldadd int, relu bool) {
	if n == 0 || p0 >= p1 {
		return
	}
	k := b.k
	c1 := p1 * usePanel
	if k == 0 || p1 > b.panels() || len(a) < (n-1)*lda+k || len(c) < (n-1)*ldc+c1 ||
		bias != nil && len(bias) < c1 || add != nil && len(add) < (n-1)*ldadd+c1 {
		panic("encoder: gemm: slices too short")
	}
	if useKern >= kernelAVX2 {
		gemmAsm(c, ldc, a, lda, n, b, p0, p1, bias, add, ldadd, relu)
		return
	}
	data := b.floats()
	for p := p0; p < p1; p++ {
		pd := data[p*usePanel*k : (p+1)*usePanel*k]
		col := p * usePanel
		var bi []float32
		if bias != nil {
			bi = bias[col : col+usePanel]
		}
		for i := 0; i < n; i += 4 {
			r := min(4, n-i)
			var ad []float32
			if add != nil {
				ad = add[i*ldadd+col:]
			}
			gemmGo(c[i*ldc+col:], ldc, a[i*lda:], lda, r, pd, k, bi, ad, ldadd, relu)
		}
	}
}

// gemmGo is one block of up to four rows and one panel (pd) in Go: four
// columns at a time, sixteen sums in variables.
func gemmGo(c []float32, ldc int, a []float32, lda, rows int, pd []float32, k int, bias, add []float32, ldadd int, relu bool) {
	var a0, a1, a2, a3 []float32
	a0 = a[:k]
	a1, a2, a3 = a0, a0, a0
	if rows > 1 {
		a1 = a[lda : lda+k]
	}
	if rows > 2 {
		a2 = a[2*lda : 2*lda+k]
	}
	if rows > 3 {
		a3 = a[3*lda : 3*lda+k]
	}
	for j := 0; j < usePanel; j += 4 {
		var s [4][4]float32
		if bias != nil {
			for r := range 4 {
				s[r] = [4]float32(bias[j : j+4])
			}
		}
		s00, s01, s02, s03 := s[0][0], s[0][1], s[0][2], s[0][3]
		s10, s11, s12, s13 := s[1][0], s[1][1], s[1][2], s[1][3]
		s20, s21, s22, s23 := s[2][0], s[2][1], s[2][2], s[2][3]
		s30, s31, s32, s33 := s[3][0], s[3][1], s[3][2], s[3][3]
		for x := range k {
			bx := pd[x*usePanel+j : x*usePanel+j+4 : x*usePanel+j+4]
			b0, b1, b2, b3 := bx[0], bx[1], bx[2], bx[3]
			v := a0[x]
			s00 += v * b0
			s01 += v * b1
			s02 += v * b2
			s03 += v * b3
			v = a1[x]
			s10 += v * b0
			s11 += v * b1
			s12 += v * b2
			s13 += v * b3
			v = a2[x]
			s20 += v * b0
			s21 += v * b1
			s22 += v * b2
			s23 += v * b3
			v = a3[x]
			s30 += v * b0
			s31 += v * b1
			s32 += v * b2
			s33 += v * b3
		}
		s = [4][4]float32{{s00, s01, s02, s03}, {s10, s11, s12, s13}, {s20, s21, s22, s23}, {s30, s31, s32, s33}}
		for r := range rows {
			out := c[r*ldc+j : r*ldc+j+4]
			for q := range 4 {
				v := s[r][q]
				if add != nil {
					v += add[r*ldadd+j+q]
				}
				if relu {
					v = max(v, 0)
				}
				out[q] = v
			}
		}
	}
}

// Tiles of useMatMul: useTileRows rows by useTilePanels panels of the
// output, computed by one goroutine each. A tile's weights (at most 1536 ×
// 64 floats, 384 KB) stay in a core's L2 cache while its rows go by.
const (
	useTileRows   = 48
	useTilePanels = 4
)

// useMatMulSerial is the least number of multiply-adds worth spreading
// over goroutines.
const useMatMulSerial = 1 << 18

// useMatMul sets dst ([n][w.m], row-major) to a·w + bias, a being [n][w.k]
// row-major, adds add ([n][w.m]) when it is not nil and clamps negatives to
// zero when relu is set. Tiles of the output are computed by up to workers
// goroutines.
func useMatMul(dst, a []float32, n int, w *usePanels, bias, add []float32, relu bool, workers int) {
	k, m := w.k, w.m
	np := w.panels()
	rt := (n + useTileRows - 1) / useTileRows
	ct := (np + useTilePanels - 1) / useTilePanels
	tiles := rt * ct
	tile := func(t int) {
		r0, p0 := (t/ct)*useTileRows, (t%ct)*useTilePanels
		r1, p1 := min(r0+useTileRows, n), min(p0+useTilePanels, np)
		var ad []float32
		if add != nil {
			ad = add[r0*m:]
		}
		gemm(dst[r0*m:], m, a[r0*k:], k, r1-r0, w, p0, p1, bias, ad, m, relu)
	}
	if n*k*m < useMatMulSerial {
		workers = 1
	}
	parallel(tiles, workers, tile)
}

// parallel runs f(0..jobs-1) on up to workers goroutines.
func parallel(jobs, workers int, f func(int)) {
	parallelW(jobs, workers, func(_, j int) { f(j) })
}

// parallelW runs f(w, 0..jobs-1) on up to workers goroutines, the calling
// one included, w (from 0 to workers-1) telling which goroutine runs a job.
func parallelW(jobs, workers int, f func(w, j int)) {
	workers = min(workers, jobs)
	if workers <= 1 {
		for j := range jobs {
			f(0, j)
		}
		return
	}
	var next atomic.Int64
	work := func(w int) {
		for {
			j := int(next.Add(1) - 1)
			if j >= jobs {
				return
			}
			f(w, j)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
}
