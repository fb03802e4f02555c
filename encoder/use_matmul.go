package encoder

import (
	"sync"
	"sync/atomic"
)

// Tile sizes of useMatMul: a tile of useTileRows rows of a against
// useTileCols rows of w keeps both (at k ≤ 1536, 6 KB a row) within a
// core's L2 cache while it is computed, and gives a short query (a few
// rows) several tiles to spread over the cores.
const (
	useTileRows = 32
	useTileCols = 64
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
// of w into dst, four rows by four columns at a time.
func useTile(dst, a []float32, k int, w []float32, m, r0, r1, c0, c1 int) {
	i := r0
	for ; i+4 <= r1; i += 4 {
		a0, a1, a2, a3 := a[i*k:(i+1)*k], a[(i+1)*k:(i+2)*k], a[(i+2)*k:(i+3)*k], a[(i+3)*k:(i+4)*k]
		j := c0
		for ; j+4 <= c1; j += 4 {
			var c [16]float32
			dot4x4(&c, a0, a1, a2, a3, w[j*k:(j+1)*k], w[(j+1)*k:(j+2)*k], w[(j+2)*k:(j+3)*k], w[(j+3)*k:(j+4)*k])
			for r := range 4 {
				copy(dst[(i+r)*m+j:(i+r)*m+j+4], c[4*r:4*r+4])
			}
		}
		for ; j < c1; j++ {
			wj := w[j*k : (j+1)*k]
			dst[i*m+j] = dot(a0, wj)
			dst[(i+1)*m+j] = dot(a1, wj)
			dst[(i+2)*m+j] = dot(a2, wj)
			dst[(i+3)*m+j] = dot(a3, wj)
		}
	}
	for ; i < r1; i++ {
		ai := a[i*k : (i+1)*k]
		for j := c0; j < c1; j++ {
			dst[i*m+j] = dot(ai, w[j*k:(j+1)*k])
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

// dot4x4Go is dot4x4 in Go: c[4r+j] = a_r · w_j for rows a0..a3 and
// w0..w3 of one length.
func dot4x4Go(c *[16]float32, a0, a1, a2, a3, w0, w1, w2, w3 []float32) {
	k := len(a0)
	a1, a2, a3 = a1[:k], a2[:k], a3[:k]
	w0, w1, w2, w3 = w0[:k], w1[:k], w2[:k], w3[:k]
	var c00, c01, c02, c03, c10, c11, c12, c13 float32
	var c20, c21, c22, c23, c30, c31, c32, c33 float32
	for x := range k {
		b0, b1, b2, b3 := w0[x], w1[x], w2[x], w3[x]
		v := a0[x]
		c00 += v * b0
		c01 += v * b1
		c02 += v * b2
		c03 += v * b3
		v = a1[x]
		c10 += v * b0
		c11 += v * b1
		c12 += v * b2
		c13 += v * b3
		v = a2[x]
		c20 += v * b0
		c21 += v * b1
		c22 += v * b2
		c23 += v * b3
		v = a3[x]
		c30 += v * b0
		c31 += v * b1
		c32 += v * b2
		c33 += v * b3
	}
	*c = [16]float32{c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33}
}
