package encoder

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestUseExp32(t *testing.T) {
	worst := 0.0
	for x := float32(-87); x <= 0; x += 0.001 {
		got, want := float64(useExp32(x)), math.Exp(float64(x))
		worst = max(worst, math.Abs(got-want)/want)
	}
	if worst > 3e-7 {
		t.Errorf("useExp32: relative error up to %.3g", worst)
	}
	if got := useExp32(float32(math.Inf(-1))); got <= 0 || got > 2e-38 {
		t.Errorf("useExp32(-Inf) = %g, want exp(-87)", got)
	}
}

// TestSoftmax compares useSoftmax on every kernel with a float64 softmax,
// rows of 1 to 40 values padded to whole panels.
func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, kern := range availableKernels() {
		for n := 1; n <= 40; n++ {
			width := (n + usePanel - 1) / usePanel * usePanel
			row := randSlice(r, width)
			for i := range row {
				row[i] *= 10
			}
			scale := float32(0.125)
			want := make([]float64, n)
			m := math.Inf(-1)
			for i := range n {
				m = max(m, float64(row[i]*scale))
			}
			var sum float64
			for i := range n {
				want[i] = math.Exp(float64(row[i]*scale) - m)
				sum += want[i]
			}
			withKernel(t, kern, func() { useSoftmax(row, n, scale) })
			for i := range width {
				w := 0.0
				if i < n {
					w = want[i] / sum
				}
				if math.Abs(float64(row[i])-w) > 1e-6*w {
					t.Fatalf("%v n=%d: softmax[%d] = %g, want %g", kern, n, i, row[i], w)
				}
			}
		}
	}
}

// TestLayerNorm compares useLayerNorm on every kernel with float64.
func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kern := range availableKernels() {
		for _, d := range []int{8, 16, 24, 40, 256, 512} {
			rows := 3
			x := randSlice(r, rows*d)
			for i := range x {
				x[i] = x[i]*5 + 3
			}
			g, b := randSlice(r, d), randSlice(r, d)
			dst := make([]float32, rows*d)
			withKernel(t, kern, func() { useLayerNorm(dst, x, d, g, b, 1e-6) })
			for row := range rows {
				xr := x[row*d : (row+1)*d]
				var mean, v float64
				for _, e := range xr {
					mean += float64(e)
				}
				mean /= float64(d)
				for _, e := range xr {
					v += (float64(e) - mean) * (float64(e) - mean)
				}
				rs := 1 / math.Sqrt(v/float64(d)+1e-6)
				for i, e := range xr {
					want := (float64(e)-mean)*rs*float64(g[i]) + float64(b[i])
					if got := float64(dst[row*d+i]); math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
						t.Fatalf("%v d=%d: row %d [%d] = %g, want %g", kern, d, row, i, got, want)
					}
				}
			}
		}
	}
}
