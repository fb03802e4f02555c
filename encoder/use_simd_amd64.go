//go:build !purego

package encoder

import "math"

//go:noescape
func softmaxAVX2(row *float32, n int, scale float32)

//go:noescape
func layerNormAVX2(dst, x *float32, d int, gain, bias *float32, eps float32)

// softmaxAsm is useSoftmax in assembly when the kernels are: the padding,
// set to -Inf, comes out as exp(-87)/sum (about 1e-38) and is then zeroed.
func softmaxAsm(row []float32, n int, scale float32) bool {
	if useKern < kernelAVX2 || len(row)%8 != 0 || n == 0 {
		return false
	}
	for t := n; t < len(row); t++ {
		row[t] = float32(math.Inf(-1))
	}
	softmaxAVX2(&row[0], len(row), scale)
	clear(row[n:])
	return true
}

// layerNormAsm is one row of useLayerNorm in assembly when the kernels are.
func layerNormAsm(dst, x, g, b []float32, eps float32) bool {
	d := len(x)
	if useKern < kernelAVX2 || d%8 != 0 || d == 0 {
		return false
	}
	_, _, _ = dst[d-1], g[d-1], b[d-1]
	layerNormAVX2(&dst[0], &x[0], d, &g[0], &b[0], eps)
	return true
}

//go:noescape
func rowStatsAVX2(row *float32, n int) (mx, ss float32)

//go:noescape
func quantizeRowAVX2(q *int16, row *float32, n int, s float32)

// rowStatsAsm is rowStats in assembly when the kernels are.
func rowStatsAsm(row []float32) (mx, ss float32, ok bool) {
	if useKern < kernelAVX2 || len(row)%16 != 0 || len(row) == 0 {
		return 0, 0, false
	}
	mx, ss = rowStatsAVX2(&row[0], len(row))
	return mx, ss, true
}

// quantizeRowAsm is quantizeRow in assembly when the kernels are.
func quantizeRowAsm(q []int16, row []float32, s float32) bool {
	n := len(row)
	if useKern < kernelAVX2 || n%16 != 0 || n == 0 {
		return false
	}
	_ = q[n-1]
	quantizeRowAVX2(&q[0], &row[0], n, s)
	return true
}
