package usage

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
)

// A scope is one scope's memory: its requests, each with the calls that
// followed it.
type scope struct {
	reqs   map[uint64]*request
	list   []*request     // reqs by key: every sum over them in one order
	calls  int            // calls held, over all requests
	bytes  int            // what requests and calls take (requestBytes, callBytes)
	newest int64          // the latest call's time (Unix nanoseconds): the scope's now
	df     map[uint32]int // requests holding each term
	gen    uint64         // counts the changes, for cache

	cacheMu sync.Mutex
	cache   *idfCache // the terms' weights at gen (Votes)
}

func newScope() *scope { return &scope{reqs: map[uint64]*request{}, df: map[uint32]int{}} }

// A request is a Request as kept: its vector quantised to int8 (scale
// times a code is the component), its terms and, with KeepText, its text;
// and the calls that followed it, sorted by identity, tool and hash.
type request struct {
	key   uint64
	vec   []int8
	scale float32
	terms []uint32
	text  string
	calls []call
}

// A call is one identity's calls of one version of a tool after a request.
type call struct {
	identity, tool, hash string
	count                int
	first, last          int64 // Unix nanoseconds
}

// Overheads counted per request and per call besides their contents.
const (
	requestOverhead = 48
	callOverhead    = 40
)

func (r *request) bytes() int {
	return requestOverhead + len(r.vec) + 4*len(r.terms) + len(r.text)
}

func (c *call) bytes() int {
	return callOverhead + len(c.identity) + len(c.tool) + len(c.hash)
}

func compareCalls(a, b call) int {
	return cmp.Or(strings.Compare(a.identity, b.identity), strings.Compare(a.tool, b.tool), strings.Compare(a.hash, b.hash))
}

// newRequest quantises r (keeping its text only if keepText) and computes
// its key, a hash of what is kept but the text: the same request asked
// twice is one request.
func newRequest(r Request, keepText bool) *request {
	q := &request{terms: slices.Compact(slices.Sorted(slices.Values(r.Terms)))}
	if len(r.Vector) > 0 {
		var maxAbs float32
		for _, x := range r.Vector {
			maxAbs = max(maxAbs, float32(math.Abs(float64(x))))
		}
		q.vec = make([]int8, len(r.Vector))
		if maxAbs > 0 {
			q.scale = maxAbs / 127
			for i, x := range r.Vector {
				q.vec[i] = int8(math.Round(float64(x / q.scale)))
			}
		}
	}
	if keepText {
		q.text = r.Text
	}
	q.key = requestKey(q)
	return q
}

// requestKey is the hash of what a request keeps but its text.
func requestKey(q *request) uint64 {
	h := fnv.New64a()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(len(q.vec)))
	h.Write(b[:])
	for _, x := range q.vec {
		h.Write([]byte{byte(x)})
	}
	binary.LittleEndian.PutUint32(b[:], math.Float32bits(q.scale))
	h.Write(b[:])
	for _, t := range q.terms {
		binary.LittleEndian.PutUint32(b[:], t)
		h.Write(b[:])
	}
	return h.Sum64()
}

// add keeps the call c after req: a new request is added, and a call of
// the same identity, tool and hash counts c's calls too (its count added,
// its first and last times widened).
func (s *scope) add(req *request, c call) {
	s.merge(req, c, func(old *call) {
		old.count += c.count
		old.first = min(old.first, c.first)
		old.last = max(old.last, c.last)
	})
}

// merge is add for a merge of two memories: a call both hold keeps the
// larger count, so that merging the same state twice changes nothing.
func (s *scope) mergeCall(req *request, c call) {
	s.merge(req, c, func(old *call) {
		old.count = max(old.count, c.count)
		old.first = min(old.first, c.first)
		old.last = max(old.last, c.last)
	})
}

func (s *scope) merge(req *request, c call, same func(*call)) {
	r := s.reqs[req.key]
	if r == nil {
		r = req
		r.calls = nil
		s.reqs[r.key] = r
		i, _ := slices.BinarySearchFunc(s.list, r.key, func(x *request, k uint64) int { return cmp.Compare(x.key, k) })
		s.list = slices.Insert(s.list, i, r)
		s.bytes += r.bytes()
		for _, t := range r.terms {
			s.df[t]++
		}
	} else if r.text == "" && req.text != "" {
		s.bytes += len(req.text)
		r.text = req.text
	}
	s.newest = max(s.newest, c.last)
	s.gen++
	i, found := slices.BinarySearchFunc(r.calls, c, compareCalls)
	if found {
		same(&r.calls[i])
		return
	}
	r.calls = slices.Insert(r.calls, i, c)
	s.calls++
	s.bytes += c.bytes()
}

// remove drops the call at i of r, and r when it has no call left.
func (s *scope) remove(r *request, i int) {
	s.gen++
	s.bytes -= r.calls[i].bytes()
	s.calls--
	r.calls = slices.Delete(r.calls, i, i+1)
	if len(r.calls) == 0 {
		s.dropRequest(r)
	}
}

func (s *scope) dropRequest(r *request) {
	for _, c := range r.calls {
		s.bytes -= c.bytes()
		s.calls--
	}
	r.calls = nil
	s.bytes -= r.bytes()
	for _, t := range r.terms {
		if s.df[t]--; s.df[t] <= 0 {
			delete(s.df, t)
		}
	}
	delete(s.reqs, r.key)
	if i, ok := slices.BinarySearchFunc(s.list, r.key, func(x *request, k uint64) int { return cmp.Compare(x.key, k) }); ok {
		s.list = slices.Delete(s.list, i, i+1)
	}
}

// decay is how much a call last made at last counts at the scope's now.
func (s *scope) decay(last int64, halfLife float64) float64 {
	age := float64(s.newest - last)
	if age <= 0 {
		return 1
	}
	return math.Exp2(-age / halfLife)
}

// bound evicts the weakest calls until the scope is within o's bounds:
// the most decayed first, then the least repeated, then the oldest (ties
// broken by request key, identity, tool and hash, so that the same scope
// always keeps the same calls).
func (s *scope) bound(o Options) {
	if s.calls <= o.MaxCalls && s.bytes <= o.MaxBytes {
		return
	}
	type ref struct {
		r *request
		c call
		w float64
	}
	hl := float64(o.HalfLife)
	refs := make([]ref, 0, s.calls)
	for _, r := range s.list {
		for _, c := range r.calls {
			refs = append(refs, ref{r, c, s.decay(c.last, hl) * (1 + math.Log2(float64(max(c.count, 1))))})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		return cmp.Or(cmp.Compare(a.w, b.w), cmp.Compare(a.c.count, b.c.count), cmp.Compare(a.c.last, b.c.last),
			cmp.Compare(a.r.key, b.r.key), compareCalls(a.c, b.c))
	})
	for _, x := range refs {
		if s.calls <= o.MaxCalls && s.bytes <= o.MaxBytes {
			break
		}
		if i, found := slices.BinarySearchFunc(x.r.calls, x.c, compareCalls); found {
			s.remove(x.r, i)
		}
	}
}
