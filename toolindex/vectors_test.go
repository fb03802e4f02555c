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
// both against float64 arithmetic, for sparse and dense queries.
func TestBlockDots(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{1, 40, 512, 1024} {
		blk := make([]int16, dim*blockSlots)
		for i := range blk {
			blk[i] = int16(r.IntN(65535) - 32767)
		}
		for _, density := range []int{1, 3, 10} { // every dimension, a third, a tenth
			var offs []int32
			var vals []float32
			for d := range dim {
				if r.IntN(density) == 0 {
					offs = append(offs, int32(d*blockSlots))
					vals = append(vals, float32(r.NormFloat64()))
				}
			}
			blk8 := make([]int8, len(blk))
			for i, c := range blk {
				blk8[i] = int8(c >> 8)
			}
			var got, gotGo, got8, got8Go [blockSlots]float32
			blockDots(blk, offs, vals, &got)
			blockDotsGo(blk, offs, vals, &gotGo)
			blockDots8(blk8, offs, vals, &got8)
			blockDotsGo(blk8, offs, vals, &got8Go)
			for j := range blockSlots {
				var want, want8 float64
				for k, o := range offs {
					want += float64(vals[k]) * float64(blk[int(o)+j])
					want8 += float64(vals[k]) * float64(blk8[int(o)+j])
				}
				tol := 1e-4 * float64(len(offs)+1) * 32767
				if math.Abs(float64(got[j])-want) > tol || math.Abs(float64(gotGo[j])-want) > tol {
					t.Fatalf("dim %d, %d dimensions, slot %d: blockDots = %v, blockDotsGo = %v, want %v", dim, len(offs), j, got[j], gotGo[j], want)
				}
				tol8 := 1e-4 * float64(len(offs)+1) * 127
				if math.Abs(float64(got8[j])-want8) > tol8 || math.Abs(float64(got8Go[j])-want8) > tol8 {
					t.Fatalf("dim %d, %d dimensions, slot %d: blockDots8 = %v, blockDotsGo = %v, want %v", dim, len(offs), j, got8[j], got8Go[j], want8)
				}
			}
		}
	}
}

// A quantised vector keeps its cosine with a query to 1e-4 with int16
// codes, 1e-2 with int8 ones (the factor makes the dequantised vector unit
// length), and a saved vector quantises back to the same codes.
func TestQuantize(t *testing.T) {
	for _, narrow := range []bool{false, true} {
		t.Run(fmt.Sprintf("narrow=%v", narrow), func(t *testing.T) { testQuantize(t, narrow) })
	}
}

func testQuantize(t *testing.T, narrow bool) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim = 512
	vs := vectors{narrow: narrow}
	// The cosine's error is about 1/(√12·‖c‖): ‖c‖ is at least 32767 for
	// int16 codes, 127 for int8 ones.
	tol := 1e-4
	if narrow {
		tol = 1e-2
	}
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
		tops, release := vs.scan([][]float32{q}, 1, nil, func(uint32) string { return "" })
		top := tops[0]
		if len(top) != 1 || math.Abs(float64(top[0].score)-exact) > tol {
			t.Fatalf("trial %d: cosine %v, want %v ± %v", trial, top, exact, tol)
		}
		release()
		saved := rows{dim: dim, codes: make([]int16, dim), factor: []float32{vs.row(make([]int16, dim), 0)}}
		vs.row(saved.codes, 0)
		back := make([]float32, dim)
		saved.vector(back, 0)
		vs.set(1, back)
		codes := make([]int16, dim)
		vs.row(codes, 1)
		if !slices.Equal(codes, saved.codes) {
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
			const dim = 40
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
					// a duplicate: a tie broken by name
					codes := make([]int16, dim)
					f := vs.row(codes, uint32(i-1))
					for j, c := range codes {
						v[j] = float32(c) * f
					}
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
			// q alone, and q between two other queries in one scan.
			top, release := vs.scan([][]float32{q}, 25, accept, name)
			got := slices.Clone(top[0])
			release()
			other := make([]float32, dim)
			other[1] = 1
			top, release = vs.scan([][]float32{other, q, other}, 25, accept, name)
			if !slices.Equal(top[1], got) {
				t.Errorf("scan of q among other queries = %v\nalone %v", top[1], got)
			}
			release()

			top1, release := vs.scan([][]float32{q}, n, nil, name)
			all := slices.Clone(top1[0])
			release()
			// Every score computed apart, by the portable kernel.
			var norm float64
			for _, x := range q {
				norm += float64(x) * float64(x)
			}
			codes := make([]int16, dim)
			var want []scored32
			for slot := range n {
				f := vs.row(codes, uint32(slot))
				if f != 0 && accept(uint32(slot)) {
					var dot float64
					for j, c := range codes {
						dot += float64(c) * float64(q[j]) / math.Sqrt(norm)
					}
					want = append(want, scored32{uint32(slot), float32(dot) * f})
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
