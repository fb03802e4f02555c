package encoder

import (
	"math"
)

// Constants of useExp32 (Cephes' expf).
const (
	expMin   = -87 // below, 2ⁿ is not a normal float32
	expLog2e = 1.44269504088896341
	expLn2Hi = 0.693359375 // ln 2 = expLn2Hi + expLn2Lo, the first exact in few bits
	expLn2Lo = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

// useExp32 returns eˣ for x ≤ 0 (x below -87 is taken as -87) to about a
// float32 ulp, as the assembly softmax computes it: x = n·ln 2 + r with n
// an integer and |r| ≤ ln 2 / 2, eʳ by a polynomial, times 2ⁿ.
func useExp32(x float32) float32 {
	x = max(x, expMin)
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	r := x - n*expLn2Hi
	r -= n * expLn2Lo
	p := float32(expP0)
	p = p*r + expP1
	p = p*r + expP2
	p = p*r + expP3
	p = p*r + expP4
	p = p*r + expP5
	y := p*(r*r) + r + 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// useSoftmax replaces row[:n] by softmax(row[:n]·scale) and zeroes the
// rest of row, whose length is a multiple of usePanel.
func useSoftmax(row []float32, n int, scale float32) {
	if softmaxAsm(row, n, scale) {
		return
	}
	r := row[:n]
	m := float32(math.Inf(-1))
	for t, v := range r {
		v *= scale
		r[t] = v
		if v > m {
			m = v
		}
	}
	var sum float32
	for t, v := range r {
		e := useExp32(v - m)
		r[t] = e
		sum += e
	}
	inv := 1 / sum
	for t := range r {
		r[t] *= inv
	}
	clear(row[n:])
}

// useLayerNorm normalises each row of x (width d) to zero mean and unit
// variance, then scales by g and shifts by b, as the graph does:
// g·rsqrt(var+eps)·(x−mean) + b.
func useLayerNorm(dst, x []float32, d int, g, b []float32, eps float32) {
	for r := 0; r+d <= len(x); r += d {
		row, o := x[r:r+d], dst[r:r+d]
		if layerNormAsm(o, row, g, b, eps) {
			continue
		}
		var s float32
		for _, v := range row {
			s += v
		}
		mean := s / float32(d)
		var q float32
		for _, v := range row {
			q += (v - mean) * (v - mean)
		}
		rs := float32(1 / math.Sqrt(float64(q/float32(d)+eps)))
		for i, v := range row {
			o[i] = g[i]*rs*(v-mean) + b[i]
		}
	}
}
