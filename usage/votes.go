package usage

import (
	"cmp"
	"fmt"
	"github.com/toolsift/toolsift/internal/usageopt"
	"math"
	"slices"
	"strings"
)

// Vote is what the requests of a Memory like a new one say of one tool.
type Vote struct {
	Tool string
	// Weight, in [0, 1], is how strongly the neighbours point at the tool:
	// its share of all the votes the request's neighbours cast, times how
	// much evidence stands behind it (saturating: one close earlier
	// request counts for a good part, several for nearly all). A ranking
	// lifts the tool by it.
	Weight float64
	// Calls is how many calls the votes stand on (their counts summed),
	// made by Identities distinct identities; Similarity is the closest of
	// their requests' similarity to the new one, in [-1, 1].
	Calls, Identities int
	Similarity        float64
}

// tuning are the rules' constants (defaultTuning), measured on the public
// datasets and the everyday sets (docs/measurements.md, "A search that
// learns from the calls it routes").
type tuning struct {
	// Alpha is the weight of the vectors' cosine in a request's
	// similarity to another, 1 − Alpha that of their terms' (idf-weighted
	// cosine, idf over the scope's requests).
	Alpha float64
	// Gate is how far above the scope's requests' mean similarity to the
	// new request, in standard deviations, an earlier request must stand
	// to vote; Floor the similarity it must have at least.
	Gate, Floor float64
	// Soft scales a request's evidence by how far its similarity stands
	// above Floor, ((x − Floor)/(1 − Floor))^Soft: a request just over the
	// floor votes little.
	Soft float64
	// Tau is the evidence at which a vote's weight reaches 1 − 1/e of its
	// share; Cap bounds one request's evidence and one identity's.
	Tau, Cap float64
	// Prior is how many unrelated requests, of similarity PriorMean ±
	// PriorSpread to any request, the scope's mean and spread are drawn
	// towards: a scope of a few requests has no mean of its own to stand
	// out from.
	Prior, PriorMean, PriorSpread float64
	// CosFloor, when positive, lets an earlier request vote by its
	// vectors' cosine alone too, with its own floor and prior
	// (CosPriorMean ± CosPriorSpread): it votes with the larger evidence.
	CosFloor, CosPriorMean, CosPriorSpread float64
	// CosMaxTerms, when positive, keeps the vectors-alone path to pairs
	// of requests of which one has fewer catalog terms than it: two
	// requests that each have that many have words enough to compare, and
	// their mixed similarity decides alone.
	CosMaxTerms float64
	// Actions: an earlier request whose action (read, create, update,
	// delete) was its tool's votes for it only in a new request that asks
	// for that action too or for none (actions.go).
	Actions bool
}

var defaultTuning = tuning{Alpha: 0.5, Gate: 2, Floor: 0.5, Soft: 0.5, Tau: 1, Cap: 3, Prior: 20, PriorMean: 0.2, PriorSpread: 0.1,
	CosFloor: 0.5, CosPriorMean: 0.31, CosPriorSpread: 0.12, CosMaxTerms: 8, Actions: true}

func (t tuning) check() error {
	ok := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !ok(t.Alpha) || t.Alpha < 0 || t.Alpha > 1 || !ok(t.Gate) || !ok(t.Floor) || t.Floor >= 1 || !ok(t.Soft) || t.Soft < 0 || !ok(t.Tau) || t.Tau <= 0 || !ok(t.Cap) || t.Cap <= 0 ||
		!ok(t.Prior) || t.Prior < 0 || !ok(t.PriorMean) || !ok(t.PriorSpread) || t.PriorSpread < 0 ||
		!ok(t.CosFloor) || t.CosFloor < 0 || t.CosFloor >= 1 || !ok(t.CosPriorMean) || !ok(t.CosPriorSpread) || t.CosPriorSpread < 0 || !ok(t.CosMaxTerms) {
		return fmt.Errorf("%w: tuning %+v", ErrOptions, t)
	}
	return nil
}

// minSpread keeps a scope whose requests are all alike (or that holds one)
// from making every small difference stand out.
const minSpread = 0.05

// Query is what Votes is asked about.
type Query struct {
	// Request is the new request.
	Request Request
	// Ranked names the best tools the ranking without the memory found
	// for the request, best first (the first 20 count). An earlier
	// request that led to several tools votes by the share of them among
	// these (at least one): a request like this one in one of its asks
	// ("calculate the stress-strain curve of graphene, then ...") does not
	// lift the tools of its other asks.
	Ranked []string
	// Valid reports whether a call of the tool at the version of hash may
	// vote: the tool is in the catalog, at that version, and the caller
	// may see it. Nil accepts every call.
	Valid func(tool, hash string) bool
}

// agreeDepth is how many of Query.Ranked a request of several calls is
// compared with.
const agreeDepth = 20

// Votes returns what the earlier requests of c's scope that stand out as
// like q's vote for, best first (ties by name). An earlier request votes
// when its similarity to q's is at least Floor and stands Gate standard
// deviations above the scope's mean similarity to it (the mean and spread
// drawn towards a prior of unrelated requests while the scope holds few),
// by how far it stands out, for every tool it led to (a request that led
// to three tools votes for the three, by the share of them the ranking
// also found, Query.Ranked), except a tool whose name's action (read,
// create, update, delete) the earlier request asked for and q's does not
// (q asks for another: actions.go). Each identity's votes are summed, its calls
// decaying with age, and capped; a tool's weight is its share of the votes
// cast times how much stands behind it (saturating). Only the calls
// q.Valid accepts count, and the votes of an identity other than c's count
// only for a tool at least Options.Support distinct identities vote for.
// Nil when nothing stands out.
func (m *Memory) Votes(c Caller, q Query) []Vote {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s := m.scopes[c.Scope]
	if s == nil || len(s.list) == 0 {
		return nil
	}
	t := m.opts.tune
	valid := q.Valid
	if valid == nil {
		valid = func(string, string) bool { return true }
	}
	top := make(map[string]bool, agreeDepth)
	for _, name := range q.Ranked[:min(agreeDepth, len(q.Ranked))] {
		top[name] = true
	}
	idfs := s.idfs()
	nq := newQuery(q.Request, idfs)
	qa := termActions(nq.terms)
	toolAct := map[string]actions{} // toolActions, per tool met
	reqs := s.list
	// Each earlier request's similarity to the new one: its vectors' and
	// terms' (mixed), and its vectors' alone (cos, when both have one).
	mixed, cos := make([]float64, len(reqs)), make([]float64, len(reqs))
	for i, r := range reqs {
		mixed[i], cos[i] = nq.similarity(r, idfs.norms[i], idfs, t.Alpha)
	}
	mixedStats := standOut(mixed, t.Prior, t.PriorMean, t.PriorSpread, t.Floor)
	cosStats := standOut(cos, t.Prior, t.CosPriorMean, t.CosPriorSpread, t.CosFloor)
	// evidence is how much request i votes: how far it stands out above
	// its scope's mean, by either similarity (a short paraphrase that
	// shares no word of the catalog is found by its vector alone, at a
	// higher bar; two long requests that share too few words to reach the
	// floor are different asks in one template, however close their
	// vectors), scaled by how far above the floor it is.
	evidence := func(i int) (e, x float64) {
		e, x = mixedStats.evidence(mixed[i], t)
		if t.CosFloor > 0 && len(nq.vec) > 0 && len(reqs[i].vec) == len(nq.vec) &&
			(t.CosMaxTerms <= 0 || float64(min(len(nq.terms), len(reqs[i].terms))) < t.CosMaxTerms) {
			if ec, _ := cosStats.evidence(cos[i], t); ec > e {
				e = ec
			}
		}
		return e, x
	}

	// Each identity's votes: mass, its requests' evidence summed; per
	// tool, the evidence of the requests that led to it.
	type tallyTool struct {
		e     float64
		calls int
		sim   float64
	}
	type identity struct {
		mass  float64
		tools map[string]*tallyTool
	}
	ids := map[string]*identity{}
	var order []string // identities as first met, for sums in one order
	hl := float64(m.opts.HalfLife)
	for i, r := range reqs {
		e, x := evidence(i)
		if e <= 0 {
			continue
		}
		// r's calls are sorted by identity: one run per identity, whose
		// mass the request adds to once, at its freshest call.
		for j := 0; j < len(r.calls); {
			k := j + 1
			for k < len(r.calls) && r.calls[k].identity == r.calls[j].identity {
				k++
			}
			var fresh float64
			var id *identity
			// The share of this identity's calls after r that the ranking
			// found too, when it made several.
			er := e
			if n, in := agreement(r.calls[j:k], valid, top); n > 1 {
				er = e * float64(max(in, 1)) / float64(n)
			}
			for _, cl := range r.calls[j:k] {
				if !valid(cl.tool, cl.hash) {
					continue
				}
				// A request that asked for another action than q's votes
				// nothing for the tool, but still stood out: its mass stays
				// in its identity's, so the tools it did not vote for are
				// not lifted as if it had not been.
				ec := er
				if t.Actions && qa != 0 {
					ta, ok := toolAct[cl.tool]
					if !ok {
						ta = toolActions(cl.tool)
						toolAct[cl.tool] = ta
					}
					if otherAction(qa, termActions(r.terms), ta) {
						ec = 0
					}
				}
				if id = ids[cl.identity]; id == nil {
					id = &identity{tools: map[string]*tallyTool{}}
					ids[cl.identity] = id
					order = append(order, cl.identity)
				}
				d := s.decay(cl.last, hl)
				tt := id.tools[cl.tool]
				if tt == nil {
					tt = &tallyTool{sim: x}
					id.tools[cl.tool] = tt
				}
				tt.e += ec * d
				tt.calls += cl.count
				tt.sim = max(tt.sim, x)
				fresh = max(fresh, d)
			}
			if id != nil {
				id.mass += er * fresh
			}
			j = k
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(order)
	// An identity's weight is capped: its votes scaled down to Cap.
	voters := map[string][]string{}
	var tools []string
	for _, name := range order {
		id := ids[name]
		if id.mass > t.Cap {
			f := t.Cap / id.mass
			id.mass = t.Cap
			for _, tt := range id.tools {
				tt.e *= f
			}
		}
		for tool, tt := range id.tools {
			if tt.e <= 0 {
				continue // no vote (another action): no support either
			}
			if voters[tool] == nil {
				tools = append(tools, tool)
			}
			voters[tool] = append(voters[tool], name)
		}
	}
	slices.Sort(tools)
	var out []Vote
	counted := map[string]bool{}
	for _, tool := range tools {
		names := voters[tool] // in identity order
		all := len(names) >= m.opts.Support
		vt := Vote{Tool: tool, Similarity: math.Inf(-1)}
		var e float64
		for _, name := range names {
			if !all && name != c.Identity {
				continue
			}
			tt := ids[name].tools[tool]
			e += tt.e
			vt.Calls += tt.calls
			vt.Identities++
			vt.Similarity = max(vt.Similarity, tt.sim)
			counted[name] = true
		}
		if e > 0 {
			vt.Weight = e
			out = append(out, vt)
		}
	}
	var mass float64
	for _, name := range order {
		if counted[name] {
			mass += ids[name].mass
		}
	}
	if len(out) == 0 || mass <= 0 {
		return nil
	}
	for i := range out {
		e := out[i].Weight
		out[i].Weight = min(e/mass, 1) * (1 - math.Exp(-e/t.Tau))
	}
	slices.SortFunc(out, func(a, b Vote) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.Tool, b.Tool))
	})
	return out
}

// stats are the mean and spread of one similarity over a scope's
// requests, drawn towards a prior (prior requests of similarity pm ± ps),
// and the floor a request's similarity must reach.
type stats struct{ mean, sd, floor float64 }

func standOut(xs []float64, prior, pm, ps, floor float64) stats {
	n := float64(len(xs))
	var mean, v float64
	for _, x := range xs {
		mean += x
	}
	mean /= n
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	v /= n
	m := (n*mean + prior*pm) / (n + prior)
	v = (n*(v+(mean-m)*(mean-m)) + prior*(ps*ps+(pm-m)*(pm-m))) / (n + prior)
	return stats{mean: m, sd: max(math.Sqrt(v), minSpread), floor: floor}
}

// evidence is what a request of similarity x votes with: how far it
// stands above the mean beyond the gate, in spreads, capped, times
// ((x − floor)/(1 − floor))^Soft; 0 below the gate or the floor.
func (st stats) evidence(x float64, t tuning) (float64, float64) {
	z := (x - st.mean) / st.sd
	if z < t.Gate || x < st.floor {
		return 0, x
	}
	return min(z-t.Gate, t.Cap) * math.Pow((x-st.floor)/(1-st.floor), t.Soft), x
}

// agreement returns how many of calls valid accepts (n) and how many of
// those are of tools in top (in).
func agreement(calls []call, valid func(string, string) bool, top map[string]bool) (n, in int) {
	for _, c := range calls {
		if valid(c.tool, c.hash) {
			n++
			if top[c.tool] {
				in++
			}
		}
	}
	return n, in
}

// A query is a Request prepared for comparing with a scope's requests:
// its terms' idf weights over the scope, normalised.
type query struct {
	vec   []float32
	terms []uint32
	w     []float64
}

// An idfCache is what the terms' similarities need of one state of a
// scope (scope.gen): each term's inverse document frequency over the
// scope's requests, ln(1 + (n+1)/(df+1)), and each request's terms' norm.
type idfCache struct {
	gen   uint64
	n     float64
	w     map[uint32]float64
	norms []float64 // of scope.list's requests, in order
}

// idf is t's weight; a term no request holds weighs the most.
func (c *idfCache) idf(t uint32) float64 {
	if w, ok := c.w[t]; ok {
		return w
	}
	return math.Log(2 + c.n)
}

// idfs returns the scope's idfCache, computed again when the scope
// changed. The caller holds the Memory's lock (read or write).
func (s *scope) idfs() *idfCache {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if c := s.cache; c != nil && c.gen == s.gen {
		return c
	}
	c := &idfCache{gen: s.gen, n: float64(len(s.list)), w: make(map[uint32]float64, len(s.df)), norms: make([]float64, len(s.list))}
	for t, df := range s.df {
		c.w[t] = math.Log(1 + (c.n+1)/float64(df+1))
	}
	for i, r := range s.list {
		var sum float64
		for _, t := range r.terms {
			w := c.w[t]
			sum += w * w
		}
		c.norms[i] = math.Sqrt(sum)
	}
	s.cache = c
	return c
}

func newQuery(r Request, c *idfCache) query {
	q := query{vec: r.Vector, terms: slices.Compact(slices.Sorted(slices.Values(r.Terms)))}
	var norm float64
	q.w = make([]float64, len(q.terms))
	for i, t := range q.terms {
		q.w[i] = c.idf(t)
		norm += q.w[i] * q.w[i]
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range q.w {
			q.w[i] /= norm
		}
	}
	return q
}

// similarity returns alpha times the cosine of q's and r's vectors plus
// 1 − alpha times their terms' idf-weighted cosine (the terms' alone when
// either has no vector or their lengths differ), and the vectors' cosine
// alone (0 without vectors).
func (q query) similarity(r *request, norm float64, c *idfCache, alpha float64) (mixed, cos float64) {
	lex := q.termCosine(r, norm, c)
	if len(q.vec) == 0 || len(q.vec) != len(r.vec) {
		return lex, 0
	}
	cos = float64(dot8(q.vec, r.vec) * r.scale)
	return alpha*cos + (1-alpha)*lex, cos
}

// dot8 is the dot product of a float vector and an int8 one of the same
// length (four sums, for the processor's pipelines).
func dot8(a []float32, b []int8) float32 {
	var s0, s1, s2, s3 float32
	n := len(a) &^ 3
	b = b[:len(a)]
	for i := 0; i < n; i += 4 {
		s0 += a[i] * float32(b[i])
		s1 += a[i+1] * float32(b[i+1])
		s2 += a[i+2] * float32(b[i+2])
		s3 += a[i+3] * float32(b[i+3])
	}
	for i := n; i < len(a); i++ {
		s0 += a[i] * float32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// termCosine is the idf-weighted cosine of q's and r's terms; norm is r's
// terms' norm.
func (q query) termCosine(r *request, norm float64, c *idfCache) float64 {
	if len(q.terms) == 0 || len(r.terms) == 0 || norm == 0 {
		return 0
	}
	var dot float64
	i := 0
	for _, t := range r.terms {
		for i < len(q.terms) && q.terms[i] < t {
			i++
		}
		if i == len(q.terms) {
			break
		}
		if q.terms[i] == t {
			dot += q.w[i] * c.idf(t)
		}
	}
	return dot / norm
}

func init() {
	usageopt.Set = func(opts any, t usageopt.Tuning) { opts.(*Options).tune = tuning(t) }
	usageopt.Default = func() usageopt.Tuning { return usageopt.Tuning(defaultTuning) }
}
