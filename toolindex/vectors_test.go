package toolindex

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/tool"
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

// sparse returns a block of random int16 codes in both forms, dense and
// sparse, a density'th of them non-zero.
func sparseBlock(r *rand.Rand, dim, density int) ([]int16, block16) {
	dense := make([]int16, dim*blockSlots)
	for i := range dense {
		if r.IntN(density) == 0 {
			dense[i] = int16(r.IntN(65535) - 32767)
		}
	}
	vs := vectors{dim: dim, blocks: []block16{{dense: slices.Clone(dense)}}}
	vs.edit(0)
	vs.done()
	return dense, vs.blocks[0]
}

// The sparse kernel gives the dense kernel's scores bit for bit, the
// portable ones too, for every query density.
func TestSparseDots(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, dim := range []int{1, 40, 1024} {
		for _, blockDensity := range []int{1, 4, 30} {
			dense, sp := sparseBlock(r, dim, blockDensity)
			if blockDensity > 1 && dim > 1 && sp.dense != nil {
				t.Fatalf("dim %d, a %dth non-zero: block stayed dense", dim, blockDensity)
			}
			for _, density := range []int{1, 3, 10} {
				var offs []int32
				var vals []float32
				for d := range dim {
					if r.IntN(density) == 0 {
						offs = append(offs, int32(d*blockSlots))
						vals = append(vals, float32(r.NormFloat64()))
					}
				}
				if len(offs) == 0 {
					continue
				}
				var want, wantGo, got, gotGo [blockSlots]float32
				blockDots(dense, offs, vals, &want)
				blockDotsGo(dense, offs, vals, &wantGo)
				if sp.dense != nil {
					continue // kept dense: nothing sparse to compare
				}
				sparseDots(&sp, offs, vals, &got)
				if sp.mask != nil { // else a block of no codes, all scores 0
					sparseDotsGo(&sp, offs, vals, &gotGo)
				}
				if got != want {
					t.Fatalf("dim %d, block 1/%d, %d dimensions: sparseDots = %v\nblockDots %v", dim, blockDensity, len(offs), got, want)
				}
				if gotGo != wantGo {
					t.Fatalf("dim %d, block 1/%d, %d dimensions: sparseDotsGo = %v\nblockDotsGo %v", dim, blockDensity, len(offs), gotGo, wantGo)
				}
			}
		}
	}
}

// An index of sparse vectors, compacted after its writes, scans and reads
// back as the same vectors kept dense; so do rewritten and cleared slots.
func TestSparseVectorsMatchDense(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const dim, n = 256, 5*blockSlots + 9
	var sp, dn vectors
	vec := func() []float32 {
		v := make([]float32, dim)
		for d := range v {
			if r.IntN(5) == 0 {
				v[d] = float32(r.NormFloat64())
			}
		}
		return v
	}
	for i := range n {
		v := vec()
		sp.set(uint32(i), v)
		dn.set(uint32(i), v)
	}
	sp.done()
	for i := range 20 {
		slot := uint32(r.IntN(n))
		if i%3 == 0 {
			sp.clear(slot)
			dn.clear(slot)
			continue
		}
		v := vec()
		sp.set(slot, v)
		dn.set(slot, v)
	}
	sp.done()
	sparse := 0
	for _, bl := range sp.blocks {
		if bl.dense == nil {
			sparse++
		}
	}
	if sparse != len(sp.blocks) {
		t.Fatalf("%d of %d blocks sparse, want all", sparse, len(sp.blocks))
	}
	for _, bl := range dn.blocks {
		if bl.dense == nil {
			t.Fatal("the dense copy was compacted")
		}
	}
	if sp.count != dn.count {
		t.Fatalf("count %d, dense copy %d", sp.count, dn.count)
	}
	a, b := make([]int16, dim), make([]int16, dim)
	for slot := range uint32(n) {
		if fa, fb := sp.row(a, slot), dn.row(b, slot); fa != fb || !slices.Equal(a, b) {
			t.Fatalf("slot %d: row differs from the dense copy's", slot)
		}
	}
	name := func(slot uint32) string { return fmt.Sprintf("t%05d", slot) }
	qs := [][]float32{vec(), vec(), vec()}
	got, release := sp.scan(qs, n, nil, name)
	want, release2 := dn.scan(qs, n, nil, name)
	for i := range qs {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("query %d: sparse scan = %v\ndense %v", i, got[i], want[i])
		}
	}
	release()
	release2()
}

// BenchmarkSparseScan scans the local embedder's vectors of real tool
// documents (the public datasets', repeated to n) for real queries, kept
// dense and compacted sparse, in turn in one loop so that a loaded machine
// slows both alike: dense-ms and sparse-ms are each one's mean per scan,
// sparse/dense their ratio, and dense-B/tool and sparse-B/tool the
// codes' memory.
//
//	go test -run '^$' -bench SparseScan ./toolindex/
func BenchmarkSparseScan(b *testing.B) {
	var docs, queries []string
	for _, name := range []string{"bfcl", "sealtools", "stabletoolbench"} {
		dir := filepath.Join("..", "..", "shared", "datasets", name)
		if d := os.Getenv("TOOLSIFT_DATASETS"); d != "" {
			dir = filepath.Join(d, name)
		}
		tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
		if err != nil {
			b.Skipf("dataset %s: %v; set TOOLSIFT_DATASETS", name, err)
		}
		qs, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tools {
			docs = append(docs, Document(t))
		}
		for _, q := range qs[:min(len(qs), 100)] {
			queries = append(queries, q.Query)
		}
	}
	emb, err := NewLocalEmbedder(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	dvecs, err := emb.Embed(ctx, docs)
	if err != nil {
		b.Fatal(err)
	}
	qvecs, err := emb.Embed(ctx, queries)
	if err != nil {
		b.Fatal(err)
	}
	name := func(slot uint32) string { return "" }
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			var dense, sparse vectors
			for i := range n {
				v := normalized(dvecs[i%len(dvecs)])
				sparse.set(uint32(i), v)
				if len(sparse.dirty) == maxDirty {
					sparse.compact()
				}
				dense.set(uint32(i), v)
				dense.dirty = dense.dirty[:0] // never compacted
				for j := range dense.blocks {
					dense.blocks[j].dirty = false
				}
			}
			sparse.done()
			var tDense, tSparse time.Duration
			var cDense, cSparse float64
			i := 0
			for b.Loop() {
				q := [][]float32{qvecs[i%len(qvecs)]}
				c0, t0 := cpuSeconds(), time.Now()
				_, release := dense.scan(q, 50, nil, name)
				release()
				c1, t1 := cpuSeconds(), time.Now()
				_, release = sparse.scan(q, 50, nil, name)
				release()
				tDense += t1.Sub(t0)
				tSparse += time.Since(t1)
				cDense += c1 - c0
				cSparse += cpuSeconds() - c1
				i++
			}
			b.ReportMetric(tDense.Seconds()*1000/float64(b.N), "dense-ms")
			b.ReportMetric(tSparse.Seconds()*1000/float64(b.N), "sparse-ms")
			b.ReportMetric(cDense*1000/float64(b.N), "dense-cpu-ms")
			b.ReportMetric(cSparse*1000/float64(b.N), "sparse-cpu-ms")
			b.ReportMetric(tSparse.Seconds()/tDense.Seconds(), "sparse/dense")
			var denseBytes, sparseBytes int
			for j := range dense.blocks {
				denseBytes += 2 * len(dense.blocks[j].dense)
				bl := &sparse.blocks[j]
				sparseBytes += 2*len(bl.dense) + 8*len(bl.mask) + 2*len(bl.start) + 2*len(bl.code)
			}
			b.ReportMetric(float64(denseBytes)/float64(n), "dense-B/tool")
			b.ReportMetric(float64(sparseBytes)/float64(n), "sparse-B/tool")
		})
	}
}

// Every writer leaves the index's n-gram blocks compacted: sparse, no
// block dirty, no spare dense codes kept.
func TestIndexCompactsVectors(t *testing.T) {
	emb, err := NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := New(emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	var tools []tool.Tool
	for i := range 3*blockSlots + 5 {
		tools = append(tools, tool.Tool{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("Does thing number %d to a record.", i)})
	}
	check := func(when string) {
		t.Helper()
		vs := &ix.sigs[sigVector].vecs
		if len(vs.dirty) != 0 || vs.spare != nil {
			t.Fatalf("after %s: %d dirty blocks, %d spare", when, len(vs.dirty), len(vs.spare))
		}
		for b, bl := range vs.blocks {
			if bl.dense != nil || bl.dirty {
				t.Fatalf("after %s: block %d is dense", when, b)
			}
		}
	}
	ctx := context.Background()
	if _, err := ix.Upsert(ctx, tools...); err != nil {
		t.Fatal(err)
	}
	check("Upsert")
	tools[7].Description = "Now does something else entirely."
	if _, err := ix.Upsert(ctx, tools[7]); err != nil {
		t.Fatal(err)
	}
	check("an Upsert of one tool")
	ix.Remove(tools[3].Name, tools[150].Name)
	check("Remove")
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	if ix, err = Load(ctx, dir, emb, nil); err != nil {
		t.Fatal(err)
	}
	check("Load")
}
