package encoder

import (
	"sync"
	"sync/atomic"
)

// Tile sizes of useMatMul: a tile of useTileRows rows of a against
// useTileCols rows of w (a multiple of the kernel's 3) keeps both (at k ≤ 1536, 6 KB a row) within a
// core's L2 cache while it is computed, and gives a short query (a few
// rows) several tiles to spread over the cores.
const (
	useTileRows = 32
	useTileCols = 48
)

// useMatMul sets dst[i][j] = bias[j] + Σₓ a[i][x]·w[j][x] for i < n and
// j < m, where a is [n][k] and w is [m][k] (a weight matrix stored
// transposed), both row-major; then adds add[i][j] when add is not nil and
// clamps negatives to zero when relu is set. Tiles of the output are
// computed by up to workers goroutines.
func useMatMul(dst, a []float32, n, k int, w []float32, m int, bias, add []float32, relu bool, workers int) {
	rt := (n + useTileRows - 1) / useTileRows
	ct := (m + useTileCols - 1) / useTileCols
	tiles := rt * ct
	tile := func(t int) {
		r0, c0 := (t/ct)*useTileRows, (t%ct)*useTileCols
		r1, c1 := min(r0+useTileRows, n), min(c0+useTileCols, m)
		useTile(dst, a, k, w, m, r0, r1, c0, c1)
		for i := r0; i < r1; i++ {
			row := dst[i*m+c0 : i*m+c1]
			b := bias[c0:c1]
			for j := range row {
				row[j] += b[j]
			}
			if add != nil {
				ad := add[i*m+c0 : i*m+c1]
				for j := range row {
					row[j] += ad[j]
				}
			}
			if relu {
				for j, v := range row {
					row[j] = max(v, 0)
				}
			}
		}
	}
	workers = min(workers, tiles)
	if workers <= 1 {
		for t := range tiles {
			tile(t)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				t := int(next.Add(1) - 1)
				if t >= tiles {
					return
				}
				tile(t)
			}
		})
	}
	wg.Wait()
}

// useTile computes the dot products of rows r0..r1 of a with rows c0..c1
// of w into dst, all rows k long.
func useTile(dst, a []float32, k int, w []float32, m, r0, r1, c0, c1 int) {
	useGemm(dst[r0*m+c0:], m, a[r0*k:], k, w[c0*k:], k, r1-r0, c1-c0, k)
}

// useGemm sets dst[i·ldd+j] = Σₓ a[i·lda+x]·w[j·ldw+x] for i < n, j < m,
// x < k, four rows by three columns at a time (the block whose sums fit
// the 16 vector registers of AVX2).
func useGemm(dst []float32, ldd int, a []float32, lda int, w []float32, ldw int, n, m, k int) {
	i := 0
	for ; i+4 <= n; i += 4 {
		ai := a[i*lda:]
		j := 0
		for ; j+3 <= m; j += 3 {
			var c [12]float32
			dot4x3(&c, ai, lda, w[j*ldw:], ldw, k)
			for r := range 4 {
				copy(dst[(i+r)*ldd+j:(i+r)*ldd+j+3], c[3*r:3*r+3])
			}
		}
		for ; j < m; j++ {
			var c [4]float32
			dot4x1(&c, ai, lda, w[j*ldw:], k)
			for r := range 4 {
				dst[(i+r)*ldd+j] = c[r]
			}
		}
	}
	for ; i < n; i++ {
		ai := a[i*lda : i*lda+k]
		for j := range m {
			dst[i*ldd+j] = dot(ai, w[j*ldw:j*ldw+k])
		}
	}
}

// dot returns Σ a[x]·b[x] over len(a), four sums at a time.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	x := 0
	for ; x+4 <= len(a); x += 4 {
		s0 += a[x] * b[x]
		s1 += a[x+1] * b[x+1]
		s2 += a[x+2] * b[x+2]
		s3 += a[x+3] * b[x+3]
	}
	for ; x < len(a); x++ {
		s0 += a[x] * b[x]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot4x3Go is dot4x3 in Go.
func dot4x3Go(c *[12]float32, a []float32, lda int, w []float32, ldw, k int) {
	a0, a1, a2, a3 := a[:k], a[lda:lda+k], a[2*lda:2*lda+k], a[3*lda:3*lda+k]
	w0, w1, w2 := w[:k], w[ldw:ldw+k], w[2*ldw:2*ldw+k]
	var c00, c01, c02, c10, c11, c12 float32
	var c20, c21, c22, c30, c31, c32 float32
	for x := range k {
		b0, b1, b2 := w0[x], w1[x], w2[x]
		v := a0[x]
		c00 += v * b0
		c01 += v * b1
		c02 += v * b2
		v = a1[x]
		c10 += v * b0
		c11 += v * b1
		c12 += v * b2
		v = a2[x]
		c20 += v * b0
		c21 += v * b1
		c22 += v * b2
		v = a3[x]
		c30 += v * b0
		c31 += v * b1
		c32 += v * b2
	}
	*c = [12]float32{c00, c01, c02, c10, c11, c12, c20, c21, c22, c30, c31, c32}
}

// dot4x1Go is dot4x1 in Go.
func dot4x1Go(c *[4]float32, a []float32, lda int, w []float32, k int) {
	w = w[:k]
	for r := range 4 {
		c[r] = dot(a[r*lda:r*lda+k], w)
	}
}
