package toolindex

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The kernel (AVX2 where the CPU has it) against the portable loop, and
// both against float64 arithmetic.
func TestDotInt16(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{32, 64, 512, 1024, 1056} {
		a := make([]int16, n)
		q := make([]float32, n)
		var want float64
		for i := range a {
			a[i] = int16(r.IntN(65535) - 32767)
			q[i] = float32(r.NormFloat64())
			want += float64(a[i]) * float64(q[i])
		}
		got, gotGo := dotInt16(a, q), dotInt16Go(a, q)
		tol := 1e-4 * float64(n) * 32767
		if math.Abs(float64(got)-want) > tol || math.Abs(float64(gotGo)-want) > tol {
			t.Errorf("n=%d: dotInt8 = %v, dotInt16Go = %v, want %v", n, got, gotGo, want)
		}
	}
}

// A quantised vector keeps its cosine with a query to 1e-4 (the
// factor makes the dequantised vector unit length), and a saved vector
// quantises back to the same codes.
func TestQuantize(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim = 512
	var vs vectors
	v := make([]float32, dim)
	q := make([]float32, dim)
	for trial := range 50 {
		var nv, nq float64
		for i := range v {
			v[i] = float32(r.NormFloat64())
			if trial%2 == 0 && r.IntN(10) > 0 {
				v[i] = 0 // sparse, as hashed n-grams are
			}
			q[i] = float32(r.NormFloat64())
			nv += float64(v[i]) * float64(v[i])
			nq += float64(q[i]) * float64(q[i])
		}
		var exact float64
		for i := range v {
			exact += float64(v[i]) * float64(q[i])
		}
		exact /= math.Sqrt(nv * nq)
		vs.set(0, v)
		top, release := vs.scan(q, 1, nil, func(uint32) string { return "" })
		if len(top) != 1 || math.Abs(float64(top[0].score)-exact) > 1e-4 {
			t.Fatalf("trial %d: cosine %v, want %v ± 1e-4", trial, top, exact)
		}
		release()
		back := make([]float32, dim)
		vs.vector(back, 0)
		codes := slices.Clone(vs.codes[:dim])
		vs.set(1, back)
		if !slices.Equal(codes, vs.codes[vs.stride:vs.stride+dim]) {
			t.Fatalf("trial %d: codes of the saved vector differ", trial)
		}
		vs.clear(1)
	}
}

// scan (split between goroutines past parallelScanMin) returns what
// sorting every score returns, with the filter and name ties.
func TestScanMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{10, 100, parallelScanMin + 77} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			const dim = 40 // padded to 64
			var vs vectors
			names := make([]string, n)
			for i := range n {
				names[i] = fmt.Sprintf("t%05d", n-i) // names descend with slots
				v := make([]float32, dim)
				for j := range v {
					v[j] = float32(r.NormFloat64())
				}
				if i%7 == 3 {
					v = make([]float32, dim) // zero: never a hit
				}
				if i%11 == 5 {
					vs.vector(v, uint32(i-1)) // a duplicate: a tie broken by name
				}
				vs.set(uint32(i), v)
			}
			vs.clear(uint32(n / 2))
			q := make([]float32, dim)
			for j := range q {
				q[j] = float32(r.NormFloat64())
			}
			accept := func(slot uint32) bool { return slot%5 != 0 }
			name := func(slot uint32) string { return names[slot] }
			top, release := vs.scan(q, 25, accept, name)
			got := slices.Clone(top)
			release()

			top1, release := vs.scan(q, n, nil, name)
			all := slices.Clone(top1)
			release()
			// Every score computed apart, by the portable kernel.
			var norm float64
			for _, x := range q {
				norm += float64(x) * float64(x)
			}
			uq := make([]float32, vs.stride)
			for j, x := range q {
				uq[j] = float32(float64(x) / math.Sqrt(norm))
			}
			var want []scored32
			for slot := range n {
				f := vs.factor[slot]
				if f != 0 && accept(uint32(slot)) {
					s := dotInt16Go(vs.codes[slot*vs.stride:(slot+1)*vs.stride], uq) * f
					want = append(want, scored32{uint32(slot), s})
				}
			}
			slices.SortFunc(want, func(a, b scored32) int {
				if c := cmp.Compare(b.score, a.score); c != 0 {
					return c
				}
				return cmp.Compare(names[a.slot], names[b.slot])
			})
			want = want[:min(25, len(want))]
			same := len(got) == len(want)
			for i := 0; same && i < len(got); i++ {
				// The kernel sums in another order than the loop.
				same = got[i].slot == want[i].slot && math.Abs(float64(got[i].score-want[i].score)) < 1e-6
			}
			if !same {
				t.Errorf("scan = %v\nwant %v", got, want)
			}
			for _, c := range all {
				if c.slot == 3 || c.slot == uint32(n/2) || vs.factor[c.slot] == 0 {
					t.Errorf("slot %d has no vector but was returned", c.slot)
				}
			}
			if len(all) != vs.count {
				t.Errorf("scan of everything returned %d, count is %d", len(all), vs.count)
			}
		})
	}
}
