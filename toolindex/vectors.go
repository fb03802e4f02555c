package toolindex

import (
	"math"
	"runtime"
	"sync"
)

// vectors is one signal's vectors, by lexical slot: each a row of int16
// codes with one float32 factor. A tool's vector v (unit length) is stored
// as codes c = round(32767·v/max|v|) and f = 1/‖c‖, so c·f is unit length
// again and the cosine of a unit query q with it is (q·c)·f. A step scans
// half the bytes float32 vectors would take (10,000 tools × 1,536
// dimensions: 31 MB instead of 61 MB), and an index holds 2 bytes per
// dimension per tool. int8 codes (a quarter) moved near-ties enough to cost
// a paraphrase set 0.008 recall@5; int16 codes rank as float32 vectors do
// (docs/measurements.md, "Vector search").
//
// vectors is not safe for concurrent use on its own: [Index] calls set and
// clear under its write lock and reads under its read lock.
type vectors struct {
	dim    int       // vector length; 0 until the first vector
	stride int       // dim rounded up to a multiple of 32 (the kernel's step)
	codes  []int16   // stride codes by slot; the padding is zero
	factor []float32 // by slot; 0 when the slot holds no vector
	count  int       // slots with a vector
}

// roundDim returns d rounded up to a multiple of 32.
func roundDim(d int) int { return (d + 31) &^ 31 }

// grow makes room for slot: room for exactly that many slots when reserve
// was told, else a quarter more than needed, so that the codes, most of an
// index's memory, carry little unused capacity (doubling would leave up to
// half of them unused).
func (vs *vectors) grow(slot uint32) {
	if int(slot) < len(vs.factor) {
		return
	}
	vs.reserve(max(int(slot)+1+int(slot)/4, 64))
}

// reserve makes room for n slots.
func (vs *vectors) reserve(n int) {
	if n <= len(vs.factor) || vs.stride == 0 {
		return
	}
	f := make([]float32, n)
	copy(f, vs.factor)
	vs.factor = f
	c := make([]int16, n*vs.stride)
	copy(c, vs.codes)
	vs.codes = c
}

// set stores v (unit length or zero, of the signal's dimension) at slot. A
// zero vector leaves the slot empty: it matches nothing.
func (vs *vectors) set(slot uint32, v []float32) {
	if vs.dim == 0 {
		vs.dim, vs.stride = len(v), roundDim(len(v))
	}
	vs.grow(slot)
	row := vs.codes[int(slot)*vs.stride : (int(slot)+1)*vs.stride]
	had := vs.factor[slot] != 0
	f := quantize(row[:vs.dim], v)
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
	clear(vs.codes[int(slot)*vs.stride : (int(slot)+1)*vs.stride])
	vs.count--
}

// vector returns the unit vector stored at slot (zeros when none) in dst,
// which has length dim.
func (vs *vectors) vector(dst []float32, slot uint32) {
	if int(slot) >= len(vs.factor) || vs.factor[slot] == 0 {
		clear(dst)
		return
	}
	f := vs.factor[slot]
	row := vs.codes[int(slot)*vs.stride:]
	for i := range dst {
		dst[i] = float32(row[i]) * f
	}
}

// codeMax is the largest code: a vector's largest component.
const codeMax = 32767

// quantize writes v's int16 codes to dst and returns the factor that makes
// them unit length, 0 for a zero vector.
func quantize(dst []int16, v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, abs32(x))
	}
	if m == 0 || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
		clear(dst)
		return 0
	}
	s := codeMax / float64(m)
	var sum int64
	for i, x := range v {
		c := int16(math.Round(float64(x) * s))
		dst[i] = c
		sum += int64(c) * int64(c)
	}
	return float32(1 / math.Sqrt(float64(sum)))
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// dotInt16Go is the portable kernel of dotInt8.
func dotInt16Go(a []int16, q []float32) float32 {
	var s0, s1, s2, s3 float32
	q = q[:len(a)]
	for i := 0; i+4 <= len(a); i += 4 {
		s0 += float32(a[i]) * q[i]
		s1 += float32(a[i+1]) * q[i+1]
		s2 += float32(a[i+2]) * q[i+2]
		s3 += float32(a[i+3]) * q[i+3]
	}
	return (s0 + s1) + (s2 + s3)
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

// scanState is the reusable memory of one scan.
type scanState struct {
	q    []float32 // the query, unit length, padded to stride
	part [2]topK
	out  []scored32
}

var scanPool = sync.Pool{New: func() any { return new(scanState) }}

// scan returns the k slots whose vectors have the largest cosine with
// query (unit length or not; not zero), best first, ties by name, among
// those that accept admits. It reads every vector once, on up to two
// goroutines. The result is valid until release is called.
func (vs *vectors) scan(query []float32, k int, accept func(slot uint32) bool, name func(slot uint32) string) (hits []scored32, release func()) {
	st := scanPool.Get().(*scanState)
	release = func() { scanPool.Put(st) }
	if vs.count == 0 || k <= 0 {
		return nil, release
	}
	if cap(st.q) < vs.stride {
		st.q = make([]float32, vs.stride)
	}
	q := st.q[:vs.stride]
	clear(q)
	var norm float64
	for _, x := range query {
		norm += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(norm)
	for i, x := range query {
		q[i] = float32(float64(x) * inv)
	}
	n := len(vs.factor)
	parts := 1
	if n >= parallelScanMin && runtime.GOMAXPROCS(0) > 1 {
		parts = 2
	}
	run := func(p int, lo, hi int) {
		t := &st.part[p]
		t.h, t.k, t.name = t.h[:0], k, name
		stride := vs.stride
		for slot := lo; slot < hi; slot++ {
			f := vs.factor[slot]
			if f == 0 {
				continue
			}
			s := dotInt16(vs.codes[slot*stride:(slot+1)*stride], q) * f
			if !t.wants(s) || (accept != nil && !accept(uint32(slot))) {
				continue
			}
			t.push(scored32{uint32(slot), s})
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
		t := &st.part[0]
		for _, c := range st.part[1].h {
			t.push(c)
		}
		st.part[1].h = st.part[1].h[:0]
	}
	st.out = st.part[0].sorted(st.out)
	st.part[0].name, st.part[1].name = nil, nil
	return st.out, release
}
