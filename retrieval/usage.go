package retrieval

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/usage"
)

// The usage signal (Options.Usage): the earlier requests of the caller's
// scope that stand out as like this one vote for the tools they led to
// (usage.Memory.Votes), and each voted tool's fused score s becomes s + v,
// v its vote's weight in [0, 1]; when that takes a score past 1, every
// score is divided by the best, so that scores stay relative to the best
// (Options.MinScore). A unanimous, close match brings its tool to the top
// even over a tool every signal ranks first (a noisy-or, s + v(1 − s),
// cannot: it was measured and dropped, docs/measurements.md), and
// neighbours that disagree (each vote a share of the votes) lift no tool
// far. It is the last stage before the tools a request names (names.go). A request's words that no tool of the
// catalog has (names, numbers, ids: what the request is about, not what it
// asks for) are not kept or compared, so that "link Maria to Orion" is not
// taken for "Maria no longer leads Orion", and an earlier request that
// asked to do what its tool's name says (add, create_field) does not vote
// for it in a request that asks for another action (show): usage's
// actions (docs/measurements.md, "A search that learns from the calls it
// routes").

// ErrRecord reports a call Record cannot learn from: a tool the index does
// not hold, or an empty request.
var ErrRecord = errors.New("retrieval: cannot record")

// Record tells the usage memory (Options.Usage) that request led to a
// successful call of the tool named name, made at time at by the caller
// of ctx (usage.CallerFrom: its scope keeps the call, for its identity).
// request is the text the call answered: a Query ranks under its Thought,
// or its Task when it has no thought, and Search under its query, so
// that the same words later find the tool. The call votes for the tool's
// current version (its content hash) only. Without a usage memory Record
// does nothing. A name the index does not hold or an empty request is an
// error wrapping ErrRecord.
func (r *Retriever) Record(ctx context.Context, request, name string, at time.Time) error {
	mem := r.opts.Usage
	if mem == nil {
		return nil
	}
	ev, err := r.UsageEvent(ctx, request, name, at)
	if err != nil {
		return err
	}
	if err := mem.Record(ev); err != nil {
		return fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return nil
}

// UsageEvent is the event Record would give the usage memory, for a
// caller that keeps or sends it itself (usage.Memory.Record): request as
// this Retriever compares it (its sentence vector and the hashed terms the
// catalog has), the tool's name and current content hash, the caller of
// ctx. It needs no usage memory. It fails as Record does.
func (r *Retriever) UsageEvent(ctx context.Context, request, name string, at time.Time) (usage.Event, error) {
	request = clip(request, maxPartRunes)
	if request == "" {
		return usage.Event{}, fmt.Errorf("%w: empty request for %q", ErrRecord, name)
	}
	t, ok := r.ix.Get(name)
	if !ok {
		return usage.Event{}, fmt.Errorf("%w: no tool %q in the index", ErrRecord, name)
	}
	req, err := r.usageRequest(ctx, request)
	if err != nil {
		return usage.Event{}, err
	}
	return usage.Event{Caller: usage.CallerFrom(ctx), Request: req, Tool: t.Name, Hash: t.Hash, Time: at}, nil
}

// usageText is the text a Query ranks under in the usage memory: its
// thought, or its task when it has none (the first of its parts).
func usageText(ps []part) string {
	if len(ps) == 0 {
		return ""
	}
	return ps[0].text
}

// usageRequest is text as the usage memory keeps and compares it: the
// semantic encoder's vector (the query path, as the ranking embeds it: the
// ranking that just ran cached it) and the hashed terms the catalog has.
func (r *Retriever) usageRequest(ctx context.Context, text string) (usage.Request, error) {
	req := usage.Request{Text: text}
	if r.sem != nil {
		vecs, err := r.queries.embed(ctx, r.sem, []string{text})
		if err != nil {
			return req, err
		}
		req.Vector = vecs[0]
	}
	vocab := r.vocab.terms(r.ix)
	var words []string
	for _, w := range textproc.Terms(text) {
		if vocab[w] {
			words = append(words, w)
		}
	}
	req.Terms = usage.HashTerms(words)
	return req, nil
}

// learns reports whether the usage memory holds calls in the scope of
// ctx's caller: a ranking with an empty memory is the ranking without one.
func (r *Retriever) learns(ctx context.Context) bool {
	return r.opts.Usage != nil && r.opts.Usage.Calls(usage.CallerFrom(ctx).Scope) > 0
}

// learned applies the usage signal to out (best first) for the request
// text, among the tools in accepts (nil: all) and the Servers filter: it
// returns out re-ranked, a voted tool that out lacks added with its vote
// alone, and what each vote added. out is not modified.
func (r *Retriever) learned(ctx context.Context, text string, out []Match, in func(tool.Tool) bool) ([]Match, []Learned, error) {
	mem := r.opts.Usage
	if !r.learns(ctx) || text == "" {
		return out, nil, nil
	}
	req, err := r.usageRequest(ctx, text)
	if err != nil {
		return nil, nil, err
	}
	filter := r.filter()
	top := make([]string, len(out))
	for i, m := range out {
		top[i] = m.Tool.Name
	}
	votes := mem.Votes(usage.CallerFrom(ctx), usage.Query{Request: req, Ranked: top, Valid: func(name, hash string) bool {
		t, ok := r.ix.Get(name)
		return ok && t.Hash == hash && (filter == nil || filter(t)) && (in == nil || in(t))
	}})
	if len(votes) == 0 {
		return out, nil, nil
	}
	res := make([]Match, len(out), len(out)+len(votes))
	copy(res, out)
	at := make(map[string]int, len(res))
	for i, m := range res {
		at[m.Tool.Name] = i
	}
	lifts := make([]Learned, 0, len(votes))
	best := 0.0
	for _, m := range res {
		best = max(best, m.Score)
	}
	for _, v := range votes {
		i, ok := at[v.Tool]
		if !ok {
			t, found := r.ix.Get(v.Tool)
			if !found {
				continue
			}
			i = len(res)
			res = append(res, Match{Tool: t})
		}
		res[i].Score += v.Weight
		best = max(best, res[i].Score)
		lifts = append(lifts, Learned{Vote: v, Lift: v.Weight})
	}
	// Scores stay in [0, 1], relative to the best (Options.MinScore):
	// when a lift took one past 1, every score is divided by the best.
	if best > 1 {
		for i := range res {
			res[i].Score /= best
		}
		for i := range lifts {
			lifts[i].Lift /= best
		}
	}
	sortMatches(res)
	return res, lifts, nil
}

// vocabulary is the index terms of the catalog's tool documents, for the
// index's current generation: the words a request is compared by in the
// usage memory.
type vocabulary struct {
	mu    sync.Mutex
	gen   uint64
	ok    bool
	words map[string]bool
}

// terms returns the catalog's index terms, computed again when the index's
// generation moved. The map is shared: read-only.
func (v *vocabulary) terms(ix *toolindex.Index) map[string]bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	gen := ix.Generation()
	if v.ok && v.gen == gen {
		return v.words
	}
	words := make(map[string]bool, len(v.words))
	for t := range ix.All() {
		for _, w := range textproc.Terms(toolindex.Document(t)) {
			words[w] = true
		}
	}
	v.words, v.gen, v.ok = words, gen, true
	return words
}
