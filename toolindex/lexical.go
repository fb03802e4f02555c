package toolindex

import (
	"math"
	"sync"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
)

// The fields of the lexical index.
const (
	fieldName = iota // name words, original name, title, server
	fieldDescription
	fieldParams
	numFields
)

// fieldTerms are a tool's analysed terms, by field.
type fieldTerms [numFields][]string

// analyzeTool returns t's lexical terms by field ([DocumentFields] analysed
// with textproc.Terms).
func analyzeTool(t tool.Tool) fieldTerms { return analyzeFields(DocumentFields(t)) }

// analyzeFields is analyzeTool for fields already extracted.
func analyzeFields(f Fields) fieldTerms {
	var ft fieldTerms
	ft[fieldName] = textproc.Terms(f.Name)
	if f.Server != "" {
		ft[fieldName] = append(ft[fieldName], textproc.Terms(f.Server)...)
	}
	ft[fieldDescription] = textproc.Terms(f.Description)
	ft[fieldParams] = textproc.Terms(f.Params)
	return ft
}

// queryTerms analyses a lexical query like a tool document.
func queryTerms(q string) []string { return textproc.Terms(q) }

// posting is one document containing a term, with the term's frequency in
// each field, counted up to 255 (a term that occurs more often in one field
// counts as 255: BM25 saturates long before in any field of ordinary
// length), so that a posting fits in 8 bytes; an index holds about 35 a
// tool.
type posting struct {
	doc uint32
	tf  [numFields]uint8
}

// lexical is a BM25F index over documents identified by small integer slots
// (assigned by [Index]). Postings lists are kept per term, so a search costs
// the lengths of its terms' lists, not the number of documents.
//
// lexical is not safe for concurrent use on its own: Index calls add and
// remove under its write lock and search under its read lock. search may
// run concurrently with other searches.
type lexical struct {
	k1, b   float64
	weights [numFields]float64

	termID   map[string]uint32
	postings [][]posting         // by term id
	live     []bool              // by slot: a document is there
	docLen   [][numFields]uint32 // by slot: terms per field
	totLen   [numFields]float64  // sum of docLen over live documents
	n        int                 // live documents

	scratch map[uint32][numFields]uint8 // add's term counts, reused
	accs    sync.Pool                   // *accumulator
}

func newLexical(p BM25) *lexical {
	return &lexical{
		k1:      p.K1,
		b:       p.B,
		weights: [numFields]float64{p.NameWeight, p.DescriptionWeight, p.ParamsWeight},
		termID:  make(map[string]uint32),
		scratch: make(map[uint32][numFields]uint8),
	}
}

// add indexes the document at slot, which must be free.
func (l *lexical) add(slot uint32, ft fieldTerms) {
	for int(slot) >= len(l.live) {
		l.live = append(l.live, false)
		l.docLen = append(l.docLen, [numFields]uint32{})
	}
	counts := l.scratch
	clear(counts)
	var lens [numFields]uint32
	for f, terms := range ft {
		lens[f] = uint32(len(terms))
		for _, term := range terms {
			id, ok := l.termID[term]
			if !ok {
				id = uint32(len(l.postings))
				l.termID[term] = id
				l.postings = append(l.postings, nil)
			}
			c := counts[id]
			if c[f] < math.MaxUint8 {
				c[f]++
			}
			counts[id] = c
		}
	}
	for id, tf := range counts {
		l.postings[id] = append(l.postings[id], posting{doc: slot, tf: tf})
	}
	l.live[slot] = true
	l.docLen[slot] = lens
	for f := range lens {
		l.totLen[f] += float64(lens[f])
	}
	l.n++
}

// removal is a document to remove: its slot and the terms it was added
// with (the index analyses its tool again rather than keep every
// document's term ids, about 160 bytes a tool, for the rare removal).
type removal struct {
	slot  uint32
	terms fieldTerms
}

// remove drops the documents rs. Each affected postings list is filtered
// once, whatever the number of documents removed.
func (l *lexical) remove(rs ...removal) {
	slots := make([]uint32, len(rs))
	for i, r := range rs {
		slots[i] = r.slot
	}
	var gone map[uint32]bool
	if len(slots) > 8 {
		gone = make(map[uint32]bool, len(slots))
		for _, s := range slots {
			gone[s] = true
		}
	}
	isGone := func(doc uint32) bool {
		if gone != nil {
			return gone[doc]
		}
		for _, s := range slots {
			if s == doc {
				return true
			}
		}
		return false
	}
	affected := make(map[uint32]bool)
	for _, r := range rs {
		s := r.slot
		if int(s) >= len(l.live) || !l.live[s] {
			continue
		}
		for _, terms := range r.terms {
			for _, term := range terms {
				if id, ok := l.termID[term]; ok {
					affected[id] = true
				}
			}
		}
		for f := range l.totLen {
			l.totLen[f] -= float64(l.docLen[s][f])
		}
		l.live[s] = false
		l.docLen[s] = [numFields]uint32{}
		l.n--
	}
	for id := range affected {
		ps := l.postings[id]
		kept := ps[:0]
		for _, p := range ps {
			if !isGone(p.doc) {
				kept = append(kept, p)
			}
		}
		clear(ps[len(kept):])
		l.postings[id] = kept
	}
}

// scored is one search result of lexical.
type scored struct {
	slot  uint32
	score float64
}

// accumulator holds the per-document scores of one search.
type accumulator struct {
	score   []float64 // by slot
	touched []uint32  // slots with a non-zero score
	top     []scored  // min-heap of the best k
}

// search returns the best k documents for the query terms that accept
// admits, best first. Ties are broken by name(slot), ascending.
func (l *lexical) search(terms []string, k int, accept func(slot uint32) bool, name func(slot uint32) string) []scored {
	if l.n == 0 || len(terms) == 0 || k <= 0 {
		return nil
	}
	// Distinct known query terms with their counts.
	type qterm struct {
		id  uint32
		qtf float64
	}
	var qbuf [16]qterm
	q := qbuf[:0]
outer:
	for _, t := range terms {
		id, ok := l.termID[t]
		if !ok || len(l.postings[id]) == 0 {
			continue
		}
		for i := range q {
			if q[i].id == id {
				q[i].qtf++
				continue outer
			}
		}
		q = append(q, qterm{id, 1})
	}
	if len(q) == 0 {
		return nil
	}

	acc, _ := l.accs.Get().(*accumulator)
	if acc == nil {
		acc = &accumulator{}
	}
	if len(acc.score) < len(l.docLen) {
		acc.score = make([]float64, len(l.docLen))
	}
	n := float64(l.n)
	var invAvg [numFields]float64
	for f := range invAvg {
		if l.totLen[f] > 0 {
			invAvg[f] = n / l.totLen[f]
		}
	}
	k1, b := l.k1, l.b
	for _, qt := range q {
		ps := l.postings[qt.id]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		w := qt.qtf * idf * (k1 + 1)
		for _, p := range ps {
			lens := &l.docLen[p.doc]
			var tf float64
			for f := range numFields {
				if p.tf[f] == 0 {
					continue
				}
				norm := 1 - b + b*float64(lens[f])*invAvg[f]
				tf += l.weights[f] * float64(p.tf[f]) / norm
			}
			if acc.score[p.doc] == 0 {
				acc.touched = append(acc.touched, p.doc)
			}
			acc.score[p.doc] += w * tf / (k1 + tf)
		}
	}

	// Keep the best k in a min-heap whose root is the worst kept.
	worse := func(a, b scored) bool {
		if a.score != b.score {
			return a.score < b.score
		}
		return name(a.slot) > name(b.slot)
	}
	h := acc.top[:0]
	for _, d := range acc.touched {
		s := scored{d, acc.score[d]}
		acc.score[d] = 0
		if len(h) == k && !worse(h[0], s) {
			continue
		}
		if !accept(d) {
			continue
		}
		if len(h) < k {
			h = append(h, s)
			siftUp(h, len(h)-1, worse)
		} else {
			h[0] = s
			siftDown(h, 0, worse)
		}
	}
	// Pop into descending order.
	out := make([]scored, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		siftDown(h, 0, worse)
	}
	acc.touched = acc.touched[:0]
	acc.top = h[:0]
	l.accs.Put(acc)
	return out
}

func siftUp(h []scored, i int, worse func(a, b scored) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func siftDown(h []scored, i int, worse func(a, b scored) bool) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
