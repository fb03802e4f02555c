package encoder

import "math"

// The int16 path of the matrix products, for query texts (see
// [USE.EmbedQueries]): the weights and each row of activations are scaled
// to int16, the products summed exactly in int32 by VPMADDWD (16
// multiply-adds an instruction, against 8 for an AVX2 FMA; 32 on AVX-512's
// 512-bit registers) or AVX-512 VNNI's VPDPWSSD (32, with the addition),
// and each sum scaled back to float32 by its row's and its column's scale.
// The sums are exact, and every kernel scales them by the same float
// operations in the same order, so all give the same floats, to the bit.
//
// No sum can overflow int32: a column of weights and a row of activations
// are each scaled so that their int16 vector has an L2 norm of at most
// useQNorm (and no value beyond ±32767), so that every partial sum of
// their products is at most (useQNorm + ½√k)² < 2³¹ by Cauchy–Schwarz.
// That gives a typical value about 11 to 13 bits (a float16 has 11), on
// top of the weights' float16.

// useQNorm bounds the L2 norm of a quantised row or column: with the
// rounding of k ≤ 1,536 values (at most ½√k more), (useQNorm+20)² < 2³¹.
const useQNorm = 46300

// gemmQArgs are the arguments of an int16 kernel (pointers and strides in
// bytes), in a struct whose offsets internal/usekgen knows: C[r][j] =
// bias[j] + rscale[r]·cscale[j]·Σₓ A[r][x]·B[x][j] (+ add[r][j]) (clamped
// at zero when relu is 1) for the rows of the kernel and the 16 columns of
// one panel.
type gemmQArgs struct {
	a      *int16   // A's first row, int16, k rounded up to even
	lda    int      // bytes from a row of A to the next
	b      *int16   // the panel (see usePanels.quant)
	k2     int      // pairs of steps of k
	c      *float32 // C's first row, at the panel's first column
	ldc    int      // bytes from a row of C to the next
	bias   *float32 // the bias of the panel's columns, or nil for zero
	add    *float32 // what to add to C's first row, or nil
	ldadd  int      // bytes from a row of add to the next
	relu   int      // 1: clamp negatives to zero
	cscale *float32 // the panel's 16 column scales
	rscale *float32 // the scale of each row of the block
}

// useQuantPanels is a matrix of usePanels in int16 for the int16 kernels:
// panel p (16 columns) holds, for each pair x2 of rows of k (k rounded up
// to even, the last row zero), 32 values: columns 0–7 then 8–15, each as
// (B[2·x2][j], B[2·x2+1][j]). scale[j] is what one unit of column j is
// worth (zero for padding columns).
type useQuantPanels struct {
	kp    int // k rounded up to even
	data  []int16
	scale []float32
}

// quant returns b in int16, made on first use (all of the model's
// matrices: about 40 ms of CPU and 9.3 MB, once per process).
func (b *usePanels) quant() *useQuantPanels {
	b.qOnce.Do(func() {
		k, np := b.k, b.panels()
		kp := (k + 1) &^ 1
		q := &useQuantPanels{kp: kp, data: make([]int16, np*usePanel*kp), scale: make([]float32, np*usePanel)}
		wide := make([]float32, usePanel*k) // a panel in float32
		for p := range np {
			pd := wide
			if b.half != nil {
				for i, h := range b.half[p*usePanel*k : (p+1)*usePanel*k] {
					pd[i] = f16to32(h)
				}
			} else {
				pd = b.data[p*usePanel*k : (p+1)*usePanel*k]
			}
			var mx, ss, s [usePanel]float64
			for x := range k {
				for j, v := range pd[x*usePanel : (x+1)*usePanel] {
					f := float64(v)
					mx[j] = max(mx[j], math.Abs(f))
					ss[j] += f * f
				}
			}
			for j := range usePanel {
				if mx[j] > 0 {
					s[j] = min(32767/mx[j], useQNorm/math.Sqrt(ss[j]))
					q.scale[p*usePanel+j] = float32(1 / s[j])
				}
			}
			qd := q.data[p*usePanel*kp : (p+1)*usePanel*kp]
			for x := range k {
				row := qd[(x/2)*32+x%2:]
				for j, v := range pd[x*usePanel : (x+1)*usePanel] {
					row[(j/8)*16+(j%8)*2] = int16(math.RoundToEven(float64(v) * s[j]))
				}
			}
		}
		b.q = q
	})
	return b.q
}

// quantizeRows writes the n rows of a (k wide, lda apart) to dst in int16
// (ldq apart, ldq ≥ k rounded up to even, the padding zero) and each row's
// scale (what one unit is worth) to scales: each row scaled so that its
// largest value is at most 32767 and its L2 norm at most useQNorm.
func quantizeRows(dst []int16, ldq int, scales []float32, a []float32, lda, n, k int) {
	for r := range n {
		row := a[r*lda : r*lda+k]
		q := dst[r*ldq : r*ldq+ldq]
		mx, ss := rowStats(row)
		if mx == 0 {
			clear(q)
			scales[r] = 0
			continue
		}
		s := float32(min(32767/float64(mx), useQNorm/math.Sqrt(float64(ss))))
		scales[r] = 1 / s
		quantizeRow(q[:k], row, s)
		clear(q[k:])
	}
}

// rowStats returns the largest magnitude in row and the sum of squares.
func rowStats(row []float32) (mx, ss float32) {
	if m, s, ok := rowStatsAsm(row); ok {
		return m, s
	}
	for _, v := range row {
		mx = max(mx, float32(math.Abs(float64(v))))
		ss += v * v
	}
	return mx, ss
}

// quantizeRow sets q[i] to row[i]·s rounded to the nearest integer (ties
// to even), which must be within ±32767.
func quantizeRow(q []int16, row []float32, s float32) {
	if quantizeRowAsm(q, row, s) {
		return
	}
	for i, v := range row {
		q[i] = int16(math.RoundToEven(float64(v * s)))
	}
}

// gemmQ is gemm on the int16 path: qa holds the n rows of A quantised
// (ldq apart), qs their scales; b's int16 panels p0..p1 give the columns.
func gemmQ(c []float32, ldc int, qa []int16, ldq int, qs []float32, n int, b *usePanels, p0, p1 int, bias, add []float32, ldadd int, relu bool) {
	if n == 0 || p0 >= p1 {
		return
	}
	q := b.quant()
	kp := q.kp
	c1 := p1 * usePanel
	if ldq < kp || p1 > b.panels() || len(qa) < (n-1)*ldq+kp || len(qs) < n || len(c) < (n-1)*ldc+c1 ||
		bias != nil && len(bias) < c1 || add != nil && len(add) < (n-1)*ldadd+c1 {
		panic("encoder: gemmQ: slices too short")
	}
	if useKern < kernelAVX2 {
		for p := p0; p < p1; p++ {
			gemmQGo(c, ldc, qa, ldq, qs, n, q, p, bias, add, ldadd, relu)
		}
		return
	}
	args := gemmQArgs{lda: 2 * ldq, k2: kp / 2, ldc: 4 * ldc, ldadd: 4 * ldadd}
	if relu {
		args.relu = 1
	}
	for p := p0; p < p1; {
		np, maxRows := gemmQBlock(n, p1-p)
		col := p * usePanel
		args.b = &q.data[p*usePanel*kp]
		args.cscale = &q.scale[col]
		args.bias = nil
		if bias != nil {
			args.bias = &bias[col]
		}
		// Blocks of at most maxRows rows, the rows shared out evenly.
		for i, blocks := 0, (n+maxRows-1)/maxRows; blocks > 0; blocks-- {
			rows := (n - i + blocks - 1) / blocks
			args.a = &qa[i*ldq]
			args.rscale = &qs[i]
			args.c = &c[i*ldc+col]
			if add != nil {
				args.add = &add[i*ldadd+col]
			}
			gemmQAsm(np, rows, &args)
			i += rows
		}
		p += np
	}
}

// gemmQGo is the int16 kernel in Go for the n rows and panel p: the same
// int32 sums and the same float operations as the assembly kernels, so the
// same floats to the bit.
func gemmQGo(c []float32, ldc int, qa []int16, ldq int, qs []float32, n int, q *useQuantPanels, p int, bias, add []float32, ldadd int, relu bool) {
	kp := q.kp
	pd := q.data[p*usePanel*kp : (p+1)*usePanel*kp]
	col := p * usePanel
	for r := range n {
		a := qa[r*ldq : r*ldq+kp]
		var s [usePanel]int32
		for x2 := range kp / 2 {
			a0, a1 := int32(a[2*x2]), int32(a[2*x2+1])
			row := pd[x2*32 : x2*32+32]
			for j := range usePanel {
				o := (j/8)*16 + (j%8)*2
				s[j] += a0*int32(row[o]) + a1*int32(row[o+1])
			}
		}
		for j := range usePanel {
			// The conversion keeps the product apart from the sums
			// (with GOAMD64=v3 the compiler would fuse them): the
			// assembly kernels' operations, the same floats.
			v := float32(float32(s[j]) * (q.scale[col+j] * qs[r]))
			if bias != nil {
				v += bias[col+j]
			}
			if add != nil {
				v += add[r*ldadd+col+j]
			}
			if relu {
				v = max(v, 0)
			}
			c[r*ldc+col+j] = v
		}
	}
}

// useMatMulQ is useMatMul on the int16 path: a's rows are quantised into
// qa and qs (at least n·kp and n long), then the tiles computed as
// useMatMul's.
func useMatMulQ(dst, a []float32, n int, w *usePanels, bias, add []float32, relu bool, workers int, qa []int16, qs []float32) {
	k, m := w.k, w.m
	kp := (k + 1) &^ 1
	quantizeRows(qa, kp, qs, a, k, n, k)
	np := w.panels()
	rt := (n + useTileRows - 1) / useTileRows
	ct := (np + useTilePanels - 1) / useTilePanels
	tile := func(t int) {
		r0, p0 := (t/ct)*useTileRows, (t%ct)*useTilePanels
		r1, p1 := min(r0+useTileRows, n), min(p0+useTilePanels, np)
		var ad []float32
		if add != nil {
			ad = add[r0*m:]
		}
		gemmQ(dst[r0*m:], m, qa[r0*kp:], kp, qs[r0:], r1-r0, w, p0, p1, bias, ad, m, relu)
	}
	if n*k*m < useMatMulSerial {
		workers = 1
	}
	parallel(rt*ct, workers, tile)
}
