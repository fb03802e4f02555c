package toolindex

import (
	"math"
	"math/bits"
	"runtime"
	"sync"
)

// vectors is one signal's vectors, by lexical slot: each vector int16 (or,
// narrow, int8) codes with one float32 factor. A tool's vector v (unit
// length) is stored as codes c = round(M·v/max|v|), M = 32767 (127), and
// f = 1/‖c‖, so c·f is unit length again and the cosine of a unit query q
// with it is (q·c)·f. The n-gram embedder's vectors are int16: int8 codes
// moved near-ties enough to cost a paraphrase set 0.008 recall@5. A
// sentence encoder's (the semantic signal) are int8: dense, with no
// component standing far above the others, they rank as int16 ones do
// within the ranking gate (docs/measurements.md, "Vector search").
//
// The codes are stored by blocks of blockSlots slots, dimension-major
// within a block: the codes of dimension d of the block's slots are
// contiguous. A scan goes block by block and, for each dimension where the
// query is not zero, adds query[d] × that column into the block's scores
// (blockDots): it reads only the columns the query needs. A hashed n-gram
// query has a few hundred of the 1,024 dimensions set, so its scan reads a
// fraction of the codes; a sentence encoder's query is dense and reads
// them all, as a row-by-row scan would. Blocks are allocated as slots are
// needed and never moved, so an index grows without copying its codes.
//
// An int16 block is kept sparse when that is much smaller (block16):
// hashed n-gram vectors set 137 to 336 of their 1,024 dimensions on
// average on the public sets (272 on the benchmarks' synthetic tools), so
// a column holds the codes of a third of the block's slots or fewer. A
// sparse column is a 64-bit mask of the slots that have a code and those
// codes, packed (10 bytes a column and 2 a code, against 128 bytes a
// column dense). A scan still reads only the query's columns: the kernel
// (sparseDots) expands each eight slots' packed codes with one byte
// shuffle and adds them with the dense kernel's fused multiply-adds, zeros
// included, so the scores are the dense block's, bit for bit. It does
// about 2.5 times the dense kernel's instructions a column but reads a
// third of its bytes: on the public sets' vectors it scans in the same
// CPU time or less; on denser ones (the benchmarks' synthetic tools) a
// step costs about a fifth more (docs/measurements.md, "Third round"). A
// write makes its block dense again until the writer calls compact, which
// encodes the blocks it touched again.
//
// vectors is not safe for concurrent use on its own: [Index] calls set,
// clear, compact and done under its write lock and reads under its read
// lock.
type vectors struct {
	dim     int       // vector length; 0 until the first vector
	narrow  bool      // int8 codes (blocks8) instead of int16 (blocks)
	blocks  []block16 // the int16 codes, by block
	blocks8 [][]int8  // dim×blockSlots codes each, dimension-major, for narrow vectors
	factor  []float32 // by slot; 0 when the slot holds no vector
	count   int       // slots with a vector
	scratch []int16   // set's codes of one vector, reused
	dirty   []uint32  // blocks made dense by set or clear since compact
	spare   [][]int16 // dense codes of compacted blocks, for the next writes
}

// block16 is one block of int16 codes, dense or sparse. A dense block has
// dim×blockSlots codes, dimension-major. A sparse one has, for dimension
// d, a code for slot j when bit j of mask[d] is set; the codes of
// dimension d are code[start[d]:], in slot order, one per bit. code ends
// with sparsePad zeros: the kernels read eight (AVX2) or sixteen (AVX-512)
// codes at a time. A sparse
// block without mask holds no codes.
type block16 struct {
	dense []int16
	mask  []uint64
	start []uint16
	code  []int16
	dirty bool // in vectors.dirty
}

// sparsePad is the number of zero codes after a sparse block's codes.
const sparsePad = 16

// maxDirty bounds the blocks a writer keeps dense before compact encodes
// them again: a bulk Upsert holds at most this many dense blocks (128 KB
// each at 1,024 dimensions) beside the sparse ones.
const maxDirty = 16

// blockSlots is the number of slots of a block: the scores of a block fit
// the kernel's eight 8-float registers, and a slot in the block fits a byte.
const blockSlots = 64

// reserve makes room for n slots.
func (vs *vectors) reserve(n int) {
	if vs.dim == 0 {
		return
	}
	for vs.nblocks()*blockSlots < n {
		if vs.narrow {
			vs.blocks8 = append(vs.blocks8, make([]int8, vs.dim*blockSlots))
		} else {
			vs.blocks = append(vs.blocks, block16{}) // empty until a write
		}
	}
	if len(vs.factor) < vs.nblocks()*blockSlots {
		vs.factor = append(vs.factor, make([]float32, vs.nblocks()*blockSlots-len(vs.factor))...)
	}
}

// nblocks returns the number of blocks.
func (vs *vectors) nblocks() int {
	if vs.narrow {
		return len(vs.blocks8)
	}
	return len(vs.blocks)
}

// set stores v (unit length or zero, of the signal's dimension) at slot. A
// zero vector leaves the slot empty: it matches nothing.
func (vs *vectors) set(slot uint32, v []float32) {
	if vs.dim == 0 {
		vs.dim = len(v)
	}
	vs.reserve(int(slot) + 1)
	if len(vs.scratch) != vs.dim {
		vs.scratch = make([]int16, vs.dim)
	}
	row := vs.scratch
	f := quantize(row, v, vs.codeMax())
	b, j := slot/blockSlots, int(slot%blockSlots)
	if vs.narrow {
		blk := vs.blocks8[b]
		for d, c := range row {
			blk[d*blockSlots+j] = int8(c)
		}
	} else {
		blk := vs.edit(b)
		for d, c := range row {
			blk[d*blockSlots+j] = c
		}
	}
	had := vs.factor[slot] != 0
	vs.factor[slot] = f
	switch {
	case had && f == 0:
		vs.count--
	case !had && f != 0:
		vs.count++
	}
}

// clear empties slot.
func (vs *vectors) clear(slot uint32) {
	if int(slot) >= len(vs.factor) || vs.factor[slot] == 0 {
		return
	}
	vs.factor[slot] = 0
	b, j := slot/blockSlots, int(slot%blockSlots)
	if vs.narrow {
		for d := range vs.dim {
			vs.blocks8[b][d*blockSlots+j] = 0
		}
	} else {
		blk := vs.edit(b)
		for d := range vs.dim {
			blk[d*blockSlots+j] = 0
		}
	}
	vs.count--
}

// edit returns the dense codes of int16 block b, decoding a sparse block,
// and marks it dirty: compact encodes it again.
func (vs *vectors) edit(b uint32) []int16 {
	bl := &vs.blocks[b]
	if bl.dirty {
		return bl.dense
	}
	if len(vs.dirty) >= maxDirty {
		vs.compact()
	}
	if bl.dense == nil {
		var dense []int16
		if n := len(vs.spare); n > 0 {
			dense, vs.spare = vs.spare[n-1], vs.spare[:n-1]
			clear(dense)
		} else {
			dense = make([]int16, vs.dim*blockSlots)
		}
		if bl.mask != nil {
			for d, m := range bl.mask {
				col := dense[d*blockSlots : (d+1)*blockSlots]
				for e := int(bl.start[d]); m != 0; m &= m - 1 {
					col[bits.TrailingZeros64(m)] = bl.code[e]
					e++
				}
			}
		}
		*bl = block16{dense: dense}
	}
	bl.dirty = true
	vs.dirty = append(vs.dirty, b)
	return bl.dense
}

// compact encodes every block written since the last compact in its
// better form: sparse when that takes at most three quarters of the dense
// codes' room (a dense embedder's blocks stay dense; so do blocks whose
// codes are so many that expanding them would cost more than it saves).
func (vs *vectors) compact() {
	for _, b := range vs.dirty {
		bl := &vs.blocks[b]
		bl.dirty = false
		nnz := 0
		for _, c := range bl.dense {
			if c != 0 {
				nnz++
			}
		}
		sparseBytes := 10*vs.dim + 2*(nnz+sparsePad)
		if nnz > math.MaxUint16 || 4*sparseBytes > 3*2*len(bl.dense) {
			continue
		}
		var sp block16
		if nnz > 0 {
			sp = block16{mask: make([]uint64, vs.dim), start: make([]uint16, vs.dim), code: make([]int16, nnz+sparsePad)}
			e := 0
			for d := range vs.dim {
				sp.start[d] = uint16(e)
				var m uint64
				for j, c := range bl.dense[d*blockSlots : (d+1)*blockSlots] {
					if c != 0 {
						m |= 1 << j
						sp.code[e] = c
						e++
					}
				}
				sp.mask[d] = m
			}
		}
		if len(vs.spare) < maxDirty {
			vs.spare = append(vs.spare, bl.dense)
		}
		*bl = sp
	}
	vs.dirty = vs.dirty[:0]
}

// done ends a writer's changes: every written block compacted, and the
// spare dense codes left to the garbage collector.
func (vs *vectors) done() {
	vs.compact()
	vs.spare = nil
}

// row copies the codes of slot into dst (length dim) and returns its
// factor, 0 when the slot holds no vector.
func (vs *vectors) row(dst []int16, slot uint32) float32 {
	if int(slot) >= len(vs.factor) || vs.factor[slot] == 0 {
		clear(dst)
		return 0
	}
	b, j := slot/blockSlots, int(slot%blockSlots)
	if vs.narrow {
		for d := range dst {
			dst[d] = int16(vs.blocks8[b][d*blockSlots+j])
		}
		return vs.factor[slot]
	}
	bl := &vs.blocks[b]
	if bl.dense != nil {
		for d := range dst {
			dst[d] = bl.dense[d*blockSlots+j]
		}
		return vs.factor[slot]
	}
	clear(dst)
	if bl.mask != nil {
		bit := uint64(1) << j
		for d, m := range bl.mask {
			if m&bit != 0 {
				dst[d] = bl.code[int(bl.start[d])+bits.OnesCount64(m&(bit-1))]
			}
		}
	}
	return vs.factor[slot]
}

// rows is a copy of some vectors of a signal, one after the other in
// slot order: what Save writes, taken under the index's read lock.
type rows struct {
	dim    int
	codes  []int16 // dim codes per vector
	factor []float32
}

// vector returns vector i (unit length; zeros when none) in dst, which
// has length dim.
func (r *rows) vector(dst []float32, i int) {
	f := r.factor[i]
	for d, c := range r.codes[i*r.dim : (i+1)*r.dim] {
		dst[d] = float32(c) * f
	}
}

// The largest code, a vector's largest component, of int16 and of int8
// (narrow) codes.
const (
	codeMax       = 32767
	codeMaxNarrow = 127
)

// codeMax returns the largest code of vs's vectors.
func (vs *vectors) codeMax() float64 {
	if vs.narrow {
		return codeMaxNarrow
	}
	return codeMax
}

// quantize writes v's codes, at most top in magnitude, to dst and returns
// the factor that makes them unit length, 0 for a zero vector.
func quantize(dst []int16, v []float32, top float64) float32 {
	var m float32
	for _, x := range v {
		m = max(m, abs32(x))
	}
	if m == 0 || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
		clear(dst)
		return 0
	}
	s := top / float64(m)
	var sum int64
	for i, x := range v {
		c := int16(math.Round(float64(x) * s))
		dst[i] = c
		sum += int64(c) * int64(c)
	}
	return float32(1 / math.Sqrt(float64(sum)))
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// sparseDotsGo is the portable kernel of sparseDots: blockDotsGo without
// the zero codes, whose products add nothing.
func sparseDotsGo(bl *block16, offs []int32, vals []float32, out *[blockSlots]float32) {
	var acc [blockSlots]float32
	for k, o := range offs {
		d := o / blockSlots
		q := vals[k]
		e := int(bl.start[d])
		for m := bl.mask[d]; m != 0; m &= m - 1 {
			acc[bits.TrailingZeros64(m)] += float32(bl.code[e]) * q
			e++
		}
	}
	*out = acc
}

// blockDotsGo is the portable kernel of blockDots (int16 codes) and
// blockDots8 (int8 codes).
func blockDotsGo[C int8 | int16](blk []C, offs []int32, vals []float32, out *[blockSlots]float32) {
	var acc [blockSlots]float32
	for k, o := range offs {
		q := vals[k]
		col := blk[o : o+blockSlots]
		for j, c := range col {
			acc[j] += float32(c) * q
		}
	}
	*out = acc
}

// scored32 is one candidate of a vector scan.
type scored32 struct {
	slot  uint32
	score float32
}

// topK keeps the best k candidates of a scan in a min-heap whose root is
// the worst kept; ties are broken by name, ascending.
type topK struct {
	h    []scored32
	k    int
	name func(slot uint32) string
}

func (t *topK) worse(a, b scored32) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return t.name(a.slot) > t.name(b.slot)
}

// wants reports whether a candidate with score s could enter the heap
// (before its name is compared): scoring is cheap, names and the filter are
// not.
func (t *topK) wants(s float32) bool { return len(t.h) < t.k || s >= t.h[0].score }

func (t *topK) push(c scored32) {
	h := t.h
	if len(h) < t.k {
		h = append(h, c)
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !t.worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if !t.worse(h[0], c) {
		return
	}
	h[0] = c
	t.down(0)
}

func (t *topK) down(i int) {
	h := t.h
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && t.worse(h[r], h[l]) {
			m = r
		}
		if !t.worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sorted empties the heap into out, best first.
func (t *topK) sorted(out []scored32) []scored32 {
	out = out[:0]
	for len(t.h) > 0 {
		out = append(out, t.h[0])
		last := len(t.h) - 1
		t.h[0] = t.h[last]
		t.h = t.h[:last]
		t.down(0)
	}
	// Popped worst first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// parallelScanMin is the number of slots from which a scan is split
// between goroutines: below it, starting them costs more than it saves.
const parallelScanMin = 4096

// scanQuery is the reusable memory of one query of a scan.
type scanQuery struct {
	offs []int32   // offset in a block of each dimension where the query is not zero
	vals []float32 // the query's value there (unit length query)
	part [2]topK   // the best of each goroutine's half
	out  []scored32
}

// scanState is the reusable memory of one scan.
type scanState struct {
	qs  []scanQuery
	out [][]scored32
}

var scanPool = sync.Pool{New: func() any { return new(scanState) }}

// scan returns, for each query (unit length or not; not zero), the k slots
// whose vectors have the largest cosine with it, best first, ties by name,
// among those that accept admits. It reads each block once for all the
// queries (a block is 64 to 128 KB: the second query finds it in cache),
// and in a block the columns of each query's non-zero dimensions, on up to
// two goroutines. The result is valid until release is called.
func (vs *vectors) scan(queries [][]float32, k int, accept func(slot uint32) bool, name func(slot uint32) string) (hits [][]scored32, release func()) {
	st := scanPool.Get().(*scanState)
	release = func() { scanPool.Put(st) }
	if vs.count == 0 || k <= 0 || len(queries) == 0 {
		return nil, release
	}
	if cap(st.qs) < len(queries) {
		st.qs = make([]scanQuery, len(queries))
	}
	qs := st.qs[:len(queries)]
	for i, query := range queries {
		var norm float64
		for _, x := range query {
			norm += float64(x) * float64(x)
		}
		inv := 1 / math.Sqrt(norm)
		q := &qs[i]
		q.offs, q.vals = q.offs[:0], q.vals[:0]
		for d, x := range query {
			if x != 0 {
				q.offs = append(q.offs, int32(d*blockSlots))
				q.vals = append(q.vals, float32(float64(x)*inv))
			}
		}
	}
	n := vs.nblocks()
	parts := 1
	if n*blockSlots >= parallelScanMin && runtime.GOMAXPROCS(0) > 1 {
		parts = 2
	}
	run := func(p int, lo, hi int) {
		for i := range qs {
			t := &qs[i].part[p]
			t.h, t.k, t.name = t.h[:0], k, name
		}
		var scores [blockSlots]float32
		for b := lo; b < hi; b++ {
			factor := vs.factor[b*blockSlots : (b+1)*blockSlots]
			for i := range qs {
				q, t := &qs[i], &qs[i].part[p]
				switch {
				case vs.narrow:
					blockDots8(vs.blocks8[b], q.offs, q.vals, &scores)
				case vs.blocks[b].dense != nil:
					blockDots(vs.blocks[b].dense, q.offs, q.vals, &scores)
				default:
					sparseDots(&vs.blocks[b], q.offs, q.vals, &scores)
				}
				for j, f := range factor {
					if f == 0 {
						continue
					}
					s := scores[j] * f
					slot := uint32(b*blockSlots + j)
					if !t.wants(s) || (accept != nil && !accept(slot)) {
						continue
					}
					t.push(scored32{slot, s})
				}
			}
		}
	}
	if parts == 1 {
		run(0, 0, n)
	} else {
		if accept != nil {
			// The caller's filter need not be safe for concurrent use;
			// it is asked only about candidates that would enter a heap,
			// a few hundred a scan, so a lock costs little.
			var mu sync.Mutex
			inner := accept
			accept = func(slot uint32) bool {
				mu.Lock()
				defer mu.Unlock()
				return inner(slot)
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() { run(1, n/2, n) })
		run(0, 0, n/2)
		wg.Wait()
		// Merge the second half's best into the first's.
		for i := range qs {
			t := &qs[i].part[0]
			for _, c := range qs[i].part[1].h {
				t.push(c)
			}
			qs[i].part[1].h = qs[i].part[1].h[:0]
		}
	}
	st.out = st.out[:0]
	for i := range qs {
		q := &qs[i]
		q.out = q.part[0].sorted(q.out)
		q.part[0].name, q.part[1].name = nil, nil
		st.out = append(st.out, q.out)
	}
	return st.out, release
}
