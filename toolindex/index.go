package toolindex

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolsift/toolsift/tool"
)

// Options configure an [Index]. The zero value (or nil) means defaults.
type Options struct {
	// BatchSize is the number of tool documents sent to an embedder per
	// Embed call. Default: the embedder's own BatchSize() when it has one
	// (provider.Embedder's EmbedderOptions.BatchSize), else 128.
	BatchSize int

	// Concurrency is the number of Embed calls Upsert runs at a time.
	// Default: GOMAXPROCS, at most 4.
	Concurrency int

	// BM25 tunes the lexical index. Zero fields take their defaults.
	BM25 BM25

	// Semantic, when set, is a second vector signal: a sentence encoder
	// (encoder.USE, a Model2Vec model, an embeddings API) given each
	// tool's [SemanticDocument], its name and what its description says
	// first, rather than the whole search document. SearchSemantic
	// searches it; package retrieval fuses it with the [Embedder]'s vectors
	// and BM25F.
	Semantic Embedder

	// Cache, when set, keeps the vectors of tool documents between runs:
	// Upsert looks every document up before embedding it and stores what
	// it embeds, so an [Index] built again over the same tools (a restart)
	// embeds nothing. Queries are never cached.
	Cache VectorCache
}

// A VectorCache keeps the vectors of tool documents between runs. Keys are
// the SHA-256 of a document's text ([Document]); embedder is the ID of the
// [Embedder] that made the vector, so vectors of two embedders never mix.
// Vectors are stored as the [Index] keeps them, unit length, and all vectors
// of one embedder have its dimension (a cached vector of another length
// than the index's is ignored). A cache may forget anything: a vector it
// does not return is embedded again.
// Implementations must be safe for concurrent use.
type VectorCache interface {
	Vector(embedder string, key [32]byte) ([]float32, bool)
	SetVector(embedder string, key [32]byte, vec []float32)
}

// BM25 are the parameters of the lexical index's BM25F ranking over three
// fields of a tool: its name, its description and its parameters' text
// (names, descriptions, enum values).
type BM25 struct {
	K1 float64 // term-frequency saturation; default 1.2
	B  float64 // length normalisation, 0..1; default 0.75

	// Field weights: how much one occurrence of a term in the field counts.
	// Defaults: name 2, description 1, parameters 0.5.
	NameWeight, DescriptionWeight, ParamsWeight float64
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Concurrency <= 0 {
		r.Concurrency = min(runtime.GOMAXPROCS(0), 4)
	}
	b := &r.BM25
	if b.K1 <= 0 {
		b.K1 = 1.2
	}
	if b.B <= 0 {
		b.B = 0.75
	}
	if b.NameWeight <= 0 {
		b.NameWeight = 2
	}
	if b.DescriptionWeight <= 0 {
		b.DescriptionWeight = 1
	}
	if b.ParamsWeight <= 0 {
		b.ParamsWeight = 0.5
	}
	return r
}

func (o Options) validate() error {
	if o.BM25.B > 1 {
		return fmt.Errorf("toolindex: BM25.B = %v, want 0..1", o.BM25.B)
	}
	return nil
}

// Index holds a set of tools keyed by Name, with one embedding per tool and
// signal (int16 or int8 codes scanned by SIMD kernels, see vectors) and a BM25F
// lexical index beside it.
//
// An Index is safe for concurrent use. Searches never wait for an embedding
// call: Upsert embeds outside the lock and swaps the result in. Writers
// (Upsert, Remove, Apply) run one at a time.
type Index struct {
	sigs []*signal // sigVector, then sigSemantic when there is one
	opts Options

	writeMu sync.Mutex // serialises writers; held across embedding
	saveMu  sync.Mutex // serialises Save (it deletes older generations)

	mu     sync.RWMutex // guards everything below and signal.dim
	tools  map[string]*entry
	slots  []*entry // by lexical slot; nil when free
	free   []uint32 // free slots
	sorted []*entry // by name; nil when stale
	lex    *lexical

	gen atomic.Uint64 // see Generation
}

// signal is one vector signal of an [Index]: an embedder, the text of a
// tool it embeds, and the vectors by lexical slot.
type signal struct {
	emb  Embedder
	text func(Fields) string
	vecs vectors
	dim  int // vector length; 0 until the first vector
}

// The signals of an [Index].
const (
	sigVector   = 0 // the Embedder, over Document
	sigSemantic = 1 // Options.Semantic, over SemanticDocument
	maxSignals  = 2
)

// entry is one indexed tool. Entries are immutable once published: an
// update replaces the entry, so a reader holding one needs no lock.
// Its vectors are in each signal's vectors at its slot.
type entry struct {
	tool tool.Tool
	slot uint32
}

// Hit is one search result. Higher scores are better; scores of different
// searches (vector vs lexical) are not on the same scale.
type Hit struct {
	Tool  tool.Tool
	Score float64
}

// UpsertStats tells what an Upsert did.
type UpsertStats struct {
	Added     int // new names
	Changed   int // known names whose content hash changed (re-embedded)
	Unchanged int // known names with the same hash (not re-embedded)
	// Embedded counts the documents sent to the embedders, Cached those
	// whose vector came from Options.Cache, Batches the Embed calls; with
	// a Semantic embedder a tool counts once per signal.
	Embedded int
	Cached   int
	Batches  int
}

// New returns an empty [Index] that embeds tool documents with emb.
func New(emb Embedder, opts *Options) (*Index, error) {
	if emb == nil {
		return nil, errors.New("toolindex: New: nil Embedder")
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	ix := &Index{
		opts:  o,
		tools: make(map[string]*entry),
		lex:   newLexical(o.BM25),
	}
	ix.sigs = append(ix.sigs, &signal{emb: emb, text: Fields.text})
	if o.Semantic != nil {
		// int8 codes: see vectors.
		ix.sigs = append(ix.sigs, &signal{emb: o.Semantic, text: Fields.semanticText, vecs: vectors{narrow: true}})
	}
	return ix, nil
}

// Generation counts the writes that changed the index: it grows whenever a
// tool is added, changed or removed, and only then. Consumers cache what
// they derive from All (a token total, say) and recompute it when the
// generation moves.
func (ix *Index) Generation() uint64 { return ix.gen.Load() }

// Embedder returns the index's embedder, which retrieval uses to embed
// queries into the same space.
func (ix *Index) Embedder() Embedder { return ix.sigs[sigVector].emb }

// Semantic returns the index's semantic embedder (Options.Semantic), or
// nil when it has none.
func (ix *Index) Semantic() Embedder {
	if len(ix.sigs) > sigSemantic {
		return ix.sigs[sigSemantic].emb
	}
	return nil
}

// VectorCache returns the index's cache of document vectors
// (Options.Cache), or nil: an index of other documents derived from this
// one (retrieval's server documents) keeps its vectors there too.
func (ix *Index) VectorCache() VectorCache { return ix.opts.Cache }

// dimension returns the length of the index's vectors, 0 while the index has
// never held a tool.
func (ix *Index) dimension() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.sigs[sigVector].dim
}

// Len returns the number of tools.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.tools)
}

// Get returns the tool called name.
func (ix *Index) Get(name string) (tool.Tool, bool) {
	ix.mu.RLock()
	e, ok := ix.tools[name]
	ix.mu.RUnlock()
	if !ok {
		return tool.Tool{}, false
	}
	return e.tool, true
}

// All yields every tool, sorted by name. It walks a snapshot: updates made
// while iterating are not seen.
func (ix *Index) All() iter.Seq[tool.Tool] {
	snap := ix.snapshot()
	return func(yield func(tool.Tool) bool) {
		for _, e := range snap {
			if !yield(e.tool) {
				return
			}
		}
	}
}

// snapshot returns the entries sorted by name. The slice is shared and must
// not be modified.
func (ix *Index) snapshot() []*entry {
	ix.mu.RLock()
	s := ix.sorted
	ix.mu.RUnlock()
	if s != nil || ix.Len() == 0 {
		return s
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.sorted == nil {
		s := slices.Collect(maps.Values(ix.tools))
		slices.SortFunc(s, func(a, b *entry) int { return cmp.Compare(a.tool.Name, b.tool.Name) })
		ix.sorted = s
	}
	return ix.sorted
}

// pending is a tool about to be written, with what was computed for it
// outside the lock.
type pending struct {
	tool     tool.Tool
	vec      [maxSignals][]float32 // nil when the vectors are the old entry's
	terms    fieldTerms
	old      *entry     // the entry it replaces, nil for a new name
	oldTerms fieldTerms // old's terms, to take it out of the lexical index
}

// Upsert adds tools and replaces the tools with the same names. Only tools
// whose content hash (Tool.Hash, computed with ContentHash when empty) is
// new or changed are embedded, in batches of Options.BatchSize, one Embed
// call per batch, Options.Concurrency calls at a time. A tool whose hash is
// unchanged keeps its vector (its other fields, such as Title or
// Annotations, are still updated).
// When a name occurs twice in tools, the last one wins.
//
// Embedding runs without blocking searches; the new state becomes visible
// at once when everything is embedded. On error nothing is changed.
func (ix *Index) Upsert(ctx context.Context, tools ...tool.Tool) (UpsertStats, error) {
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	return ix.upsertLocked(ctx, tools)
}

func (ix *Index) upsertLocked(ctx context.Context, tools []tool.Tool) (UpsertStats, error) {
	var st UpsertStats
	// Last occurrence of a name wins.
	last := make(map[string]int, len(tools))
	for i, t := range tools {
		if t.Name == "" {
			return st, fmt.Errorf("%w: tool %d has no name", ErrInvalidTool, i)
		}
		last[t.Name] = i
	}
	// Writers are serialised by writeMu, so ix.tools cannot change under us
	// and reading it needs only the read lock.
	ix.mu.RLock()
	ps := make([]pending, 0, len(last))
	var embedIdx []int // index in ps of the tools to embed
	for i, t := range tools {
		if last[t.Name] != i {
			continue
		}
		if t.Hash == "" {
			t = t.WithHash()
		}
		old, ok := ix.tools[t.Name]
		switch {
		case !ok:
			st.Added++
		case old.tool.Hash != t.Hash:
			st.Changed++
		default:
			st.Unchanged++
			if !tool.Same(old.tool, t) || !bytes.Equal(old.tool.InputSchema, t.InputSchema) {
				// Same content for the model, other metadata (title,
				// annotations, the schema's bytes): keep the vector,
				// update what is stored.
				ps = append(ps, pending{tool: t, old: old})
			}
			continue
		}
		embedIdx = append(embedIdx, len(ps))
		ps = append(ps, pending{tool: t, old: old})
	}
	var dims [maxSignals]int
	for s, sig := range ix.sigs {
		dims[s] = sig.dim
	}
	ix.mu.RUnlock()

	// The fields of each tool are extracted once, for its lexical terms
	// and, when it is to be embedded, each signal's text of it.
	var texts [maxSignals][]string
	for s := range ix.sigs {
		texts[s] = make([]string, len(embedIdx))
	}
	textOf := make([]int, len(ps))
	for i := range textOf {
		textOf[i] = -1
	}
	for j, i := range embedIdx {
		textOf[i] = j
	}
	analyzeAll(len(ps), func(i int) {
		f := DocumentFields(ps[i].tool)
		ps[i].terms = analyzeFields(f)
		if old := ps[i].old; old != nil {
			ps[i].oldTerms = analyzeTool(old.tool)
		}
		if j := textOf[i]; j >= 0 {
			for s, sig := range ix.sigs {
				texts[s][j] = sig.text(f)
			}
		}
	})

	for s := range ix.sigs {
		d, err := ix.vectors(ctx, s, ps, embedIdx, texts[s], dims[s], ix.opts.Cache, &st)
		if err != nil {
			return UpsertStats{}, err
		}
		dims[s] = d
	}

	ix.mu.Lock()
	defer ix.mu.Unlock()
	for s, sig := range ix.sigs {
		sig.dim = dims[s]
	}
	// Take the replaced documents out of the lexical index in one pass.
	var stale []removal
	for _, p := range ps {
		if p.old != nil {
			stale = append(stale, removal{p.old.slot, p.oldTerms})
		}
	}
	ix.lex.remove(stale...)
	// Room for every new tool's vectors at once, not a growth per batch.
	added := 0
	for _, p := range ps {
		if ix.tools[p.tool.Name] == nil {
			added++
		}
	}
	if slots := len(ix.slots) + max(added-len(ix.free), 0); added > 0 {
		for _, sig := range ix.sigs {
			if sig.vecs.dim == 0 && sig.dim > 0 {
				sig.vecs.dim = sig.dim
			}
			sig.vecs.reserve(slots)
		}
	}
	for _, p := range ps {
		ix.putLocked(p.tool, p.vec, p.terms, ix.tools[p.tool.Name])
	}
	ix.vectorsDoneLocked()
	if len(ps) > 0 {
		ix.sorted = nil
		ix.gen.Add(1)
	}
	return st, nil
}

// vectors sets ps[embedIdx[j]].vec[s] for every texts[j], signal s's text
// of the tool: from cache when it has a vector of the signal's dimension,
// else embedded (and then cached). It returns the dimension of the vectors
// (dim when there were none).
func (ix *Index) vectors(ctx context.Context, s int, ps []pending, embedIdx []int, texts []string, dim int, cache VectorCache, st *UpsertStats) (int, error) {
	if len(texts) == 0 {
		return dim, nil
	}
	var keys [][32]byte
	if cache != nil {
		// Vectors of documents embedded in an earlier run; the rest are
		// embedded below. Only vectors of the index's dimension are used;
		// an empty index learns it from the embedder first (one document),
		// so that a wrong cache cannot set it.
		keys = make([][32]byte, len(texts))
		for j, text := range texts {
			keys[j] = sha256.Sum256([]byte(text))
		}
		if dim == 0 {
			d, err := ix.embed(ctx, s, ps, embedIdx[:1], texts[:1], keys[:1], 0, cache, st)
			if err != nil {
				return 0, err
			}
			dim = d
			embedIdx, texts, keys = embedIdx[1:], texts[1:], keys[1:]
		}
		id := ix.sigs[s].emb.ID()
		missing := embedIdx[:0:0]
		var missingTexts []string
		var missingKeys [][32]byte
		for j, text := range texts {
			if v, ok := cache.Vector(id, keys[j]); ok && len(v) == dim {
				ps[embedIdx[j]].vec[s] = slices.Clone(v)
				st.Cached++
				continue
			}
			missing = append(missing, embedIdx[j])
			missingTexts = append(missingTexts, text)
			missingKeys = append(missingKeys, keys[j])
		}
		embedIdx, texts, keys = missing, missingTexts, missingKeys
	}
	return ix.embed(ctx, s, ps, embedIdx, texts, keys, dim, cache, st)
}

// embed embeds texts[j] with signal s into ps[embedIdx[j]].vec[s], and
// caches the vectors under keys when cache is set. It returns their
// dimension.
func (ix *Index) embed(ctx context.Context, s int, ps []pending, embedIdx []int, texts []string, keys [][32]byte, dim int, cache VectorCache, st *UpsertStats) (int, error) {
	if len(texts) == 0 {
		return dim, nil
	}
	emb := ix.sigs[s].emb
	vecs, d, err := embedBatched(ctx, emb, texts, ix.batchSize(s), ix.opts.Concurrency, dim)
	if err != nil {
		return 0, err
	}
	for j, v := range vecs {
		ps[embedIdx[j]].vec[s] = normalized(v)
	}
	if cache != nil {
		id := emb.ID()
		for j := range vecs {
			cache.SetVector(id, keys[j], ps[embedIdx[j]].vec[s])
		}
	}
	st.Embedded += len(texts)
	st.Batches += (len(texts) + ix.batchSize(s) - 1) / ix.batchSize(s)
	return d, nil
}

// batchSize is the number of documents per Embed call of signal s: the
// option, else the embedder's own BatchSize, else 128.
func (ix *Index) batchSize(s int) int {
	if ix.opts.BatchSize > 0 {
		return ix.opts.BatchSize
	}
	if b, ok := ix.sigs[s].emb.(interface{ BatchSize() int }); ok && b.BatchSize() > 0 {
		return b.BatchSize()
	}
	return 128
}

// putLocked writes one tool with its vectors (one per signal; nil vectors
// keep the old entry's). old is the entry it replaces, or nil; the caller
// has already removed old from the lexical index.
func (ix *Index) putLocked(t tool.Tool, vec [maxSignals][]float32, terms fieldTerms, old *entry) {
	var slot uint32
	if old != nil {
		slot = old.slot
	} else if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = uint32(len(ix.slots))
		ix.slots = append(ix.slots, nil)
	}
	for s, sig := range ix.sigs {
		if vec[s] == nil {
			continue // unchanged content: the slot keeps its vectors
		}
		if sig.vecs.dim == 0 && sig.dim > 0 {
			sig.vecs.dim = sig.dim
		}
		sig.vecs.set(slot, vec[s])
	}
	ix.lex.add(slot, terms)
	e := &entry{tool: t, slot: slot}
	ix.slots[slot] = e
	ix.tools[t.Name] = e
}

// vectorsDoneLocked ends a write to the vectors (vectors.done): the
// blocks it changed are encoded in their smaller form before readers scan
// them. The caller holds mu for writing.
func (ix *Index) vectorsDoneLocked() {
	for _, sig := range ix.sigs {
		sig.vecs.done()
	}
}

// analyzeAll calls analyze(0..n-1) on up to GOMAXPROCS goroutines: text
// analysis is most of the cost of indexing a tool whose vector is known.
func analyzeAll(n int, analyze func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	if workers <= 1 {
		for i := range n {
			analyze(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				analyze(i)
			}
		})
	}
	wg.Wait()
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// Remove deletes the named tools and returns how many were present.
func (ix *Index) Remove(names ...string) int {
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	return ix.removeLocked(names)
}

func (ix *Index) removeLocked(names []string) int {
	// The removed tools' terms are analysed before the write lock: writers
	// are serialised by writeMu, so the entries cannot change meanwhile.
	var gone []removal
	seen := make(map[string]bool, len(names))
	ix.mu.RLock()
	for _, name := range names {
		if e, ok := ix.tools[name]; ok && !seen[name] {
			seen[name] = true
			gone = append(gone, removal{slot: e.slot})
		}
	}
	ix.mu.RUnlock()
	analyzeAll(len(gone), func(i int) { gone[i].terms = analyzeTool(ix.slots[gone[i].slot].tool) })
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, r := range gone {
		e := ix.slots[r.slot]
		delete(ix.tools, e.tool.Name)
		ix.slots[e.slot] = nil
		ix.free = append(ix.free, e.slot)
		for _, sig := range ix.sigs {
			sig.vecs.clear(e.slot)
		}
	}
	ix.vectorsDoneLocked()
	if len(gone) == 0 {
		return 0
	}
	ix.lex.remove(gone...)
	ix.sorted = nil
	ix.gen.Add(1)
	return len(gone)
}

// Apply applies a change event from upstream.Hub: Removed names are deleted,
// Added and Changed tools are upserted (only new content is embedded).
// Removals are applied only if the upsert succeeds.
func (ix *Index) Apply(ctx context.Context, c tool.Change) error {
	if c.Empty() {
		return nil
	}
	ix.writeMu.Lock()
	defer ix.writeMu.Unlock()
	tools := make([]tool.Tool, 0, len(c.Added)+len(c.Changed))
	tools = append(tools, c.Added...)
	tools = append(tools, c.Changed...)
	if _, err := ix.upsertLocked(ctx, tools); err != nil {
		return fmt.Errorf("toolindex: apply change of server %q: %w", c.Server, err)
	}
	ix.removeLocked(c.Removed)
	return nil
}

// SearchVector returns the k tools whose vectors are most similar (cosine)
// to query, best first, among the tools that filter accepts (nil accepts
// all). k larger than the index is clamped; a zero query matches nothing.
// query must have the index's dimension ([ErrDimension] otherwise).
func (ix *Index) SearchVector(ctx context.Context, query []float32, k int, filter func(tool.Tool) bool) ([]Hit, error) {
	hits, err := ix.search(ctx, sigVector, [][]float32{query}, k, filter)
	if err != nil || hits == nil {
		return nil, err
	}
	return hits[0], nil
}

// SearchVectorBatch is SearchVector for several queries at once (the
// parts of an agent's step): hits[i] are the hits of queries[i]. The
// vectors are read once for all of them, so a batch costs about one search
// over a catalog too large for the CPU's caches.
func (ix *Index) SearchVectorBatch(ctx context.Context, queries [][]float32, k int, filter func(tool.Tool) bool) ([][]Hit, error) {
	return ix.search(ctx, sigVector, queries, k, filter)
}

// SearchSemantic is SearchVector over the vectors of the Semantic
// embedder: query is a vector of Semantic. An index without one returns
// [ErrNoSemantic].
func (ix *Index) SearchSemantic(ctx context.Context, query []float32, k int, filter func(tool.Tool) bool) ([]Hit, error) {
	hits, err := ix.SearchSemanticBatch(ctx, [][]float32{query}, k, filter)
	if err != nil || hits == nil {
		return nil, err
	}
	return hits[0], nil
}

// SearchSemanticBatch is SearchVectorBatch over the vectors of the
// Semantic embedder. An index without one returns [ErrNoSemantic].
func (ix *Index) SearchSemanticBatch(ctx context.Context, queries [][]float32, k int, filter func(tool.Tool) bool) ([][]Hit, error) {
	if len(ix.sigs) <= sigSemantic {
		return nil, ErrNoSemantic
	}
	return ix.search(ctx, sigSemantic, queries, k, filter)
}

// search is SearchVectorBatch over signal s: one exact scan of its vectors
// for all queries (vectors.scan). It returns nil when k <= 0 or the signal
// has no vectors, else one list per query (nil for a zero query).
func (ix *Index) search(ctx context.Context, s int, queries [][]float32, k int, filter func(tool.Tool) bool) ([][]Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sig := ix.sigs[s]
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if sig.vecs.count == 0 {
		return nil, nil
	}
	// The non-zero queries are scanned; at[j] is the index of the j-th.
	scan := make([][]float32, 0, len(queries))
	at := make([]int, 0, len(queries))
	for i, q := range queries {
		if len(q) != sig.dim {
			return nil, fmt.Errorf("%w: %s query vector has length %d, index has %d", ErrDimension, sig.emb.ID(), len(q), sig.dim)
		}
		if !isZero(q) {
			scan = append(scan, q)
			at = append(at, i)
		}
	}
	var accept func(slot uint32) bool
	if filter != nil {
		accept = func(slot uint32) bool { return filter(ix.slots[slot].tool) }
	}
	tops, release := sig.vecs.scan(scan, k, accept, ix.slotName)
	defer release()
	out := make([][]Hit, len(queries))
	for j, top := range tops {
		hits := make([]Hit, len(top))
		for i, c := range top {
			hits[i] = Hit{Tool: ix.slots[c.slot].tool, Score: float64(c.score)}
		}
		out[at[j]] = hits
	}
	return out, nil
}

// slotName is the name of the tool at slot; the caller holds mu.
func (ix *Index) slotName(slot uint32) string { return ix.slots[slot].tool.Name }

// SearchLexical returns the k tools that best match query under BM25F,
// best first, among the tools that filter accepts (nil accepts all). The
// query is analysed like tool documents (internal/textproc.Terms). Tools
// that share no term with the query are not returned.
func (ix *Index) SearchLexical(query string, k int, filter func(tool.Tool) bool) []Hit {
	if k <= 0 {
		return nil
	}
	terms := queryTerms(query)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	top := ix.lex.search(terms, k, func(slot uint32) bool {
		return filter == nil || filter(ix.slots[slot].tool)
	}, func(slot uint32) string {
		return ix.slots[slot].tool.Name
	})
	hits := make([]Hit, len(top))
	for i, s := range top {
		hits[i] = Hit{Tool: ix.slots[s.slot].tool, Score: s.score}
	}
	return hits
}
