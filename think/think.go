package think

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// The defaults: the agent, toolbench and the benchmarks all take them from
// here, so every number toolbench prints is what the agent sends.
const (
	// DefaultBudget is the most tokens the tool definitions of one request
	// may cost (see Options.Budget).
	DefaultBudget = 4000
	// DefaultK is how many ranked tools a step considers; budget.Select
	// then decides which of them are sent, and at which tier.
	DefaultK = retrieval.DefaultK
	// DefaultMaxTools is the most tools in one request: OpenAI rejects more
	// than 128.
	DefaultMaxTools = 128
)

// ErrOptions reports invalid Options.
var ErrOptions = errors.New("think: invalid options")

// SearchMode says when the search_tools meta-tool is offered.
type SearchMode int

const (
	// SearchAuto offers search_tools whenever a tool of the catalog is
	// left out of the request.
	SearchAuto SearchMode = iota
	// SearchAlways offers search_tools at every step.
	SearchAlways
	// SearchNever never offers it.
	SearchNever
)

// Why a tool was offered.
const (
	ReasonRetrieved = "retrieved" // ranked by the retriever for this step
	ReasonPinned    = "pinned"    // retrieval.Options.Pinned
	ReasonSticky    = "sticky"    // used earlier in the conversation
	ReasonFound     = "found"     // found by search_tools or offered as a close match last step
	ReasonAll       = "all"       // the whole catalog fits the budget
	ReasonMeta      = "meta"      // the search_tools meta-tool
)

// Options configure a Thinker. The zero value (or nil) gives the defaults.
type Options struct {
	// Budget is the most tokens the tools offered at one step may cost, as
	// budget.Tokenizer.Render counts them. Default DefaultBudget. A tool
	// that is larger than the whole budget even at its cheapest tier may
	// still be offered when it is clearly wanted (see Thinker.Think).
	Budget int
	// MinTools and MaxTools bound the number of tools offered at one step
	// (besides search_tools). Defaults 0 and DefaultMaxTools.
	MinTools, MaxTools int
	// Search says when to offer the search_tools meta-tool.
	Search SearchMode
	// Retrieval configures the ranking (K, mode, pinned tools, ...). Its
	// K, default DefaultK, bounds how many ranked tools a step considers.
	Retrieval retrieval.Options
	// Tokenizer counts tokens; nil means o200k_base.
	Tokenizer *budget.Tokenizer
	// Costs, when set, keeps the full-tier token cost of tools between
	// runs, so that the catalog's cost (Offer.AllTokens) is not counted
	// again at every start: counting a catalog of thousands of tools takes
	// about a second (docs/measurements.md, "Think step").
	Costs CostCache
}

// A CostCache keeps the full-tier token cost of tools between runs, keyed
// by the tokenizer's ID (budget.Tokenizer.ID) and the tool's content hash
// (tool.Tool.Hash). A cache may forget anything: a cost it does not return
// is counted again. Implementations must be safe for concurrent use.
type CostCache interface {
	Cost(tokenizer, hash string) (tokens int, ok bool)
	SetCost(tokenizer, hash string, tokens int)
}

// A Thinker is the one Think step of toolsift: rank the catalog for the
// step, fit the best tools into the budget, add the search_tools meta-tool
// when tools are left out, and put the request in a stable order. The
// agent, toolbench and the benchmarks all use it. It is safe for concurrent
// use, including while the index changes.
type Thinker struct {
	ix   *toolindex.Index
	r    *retrieval.Retriever
	tok  *budget.Tokenizer
	opts Options

	mu   sync.Mutex
	cost catalogCost
}

// catalogCost is what sending the whole catalog costs, for one index
// generation.
type catalogCost struct {
	valid  bool
	gen    uint64
	tokens int // every tool at full tier
	tools  int
	byHash map[string]int // full-tier tokens by content hash
}

// New returns a Thinker over ix.
func New(ix *toolindex.Index, opts *Options) (*Thinker, error) {
	if ix == nil {
		return nil, fmt.Errorf("%w: nil index", ErrOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Budget < 0, o.MinTools < 0, o.MaxTools < 0:
		return nil, fmt.Errorf("%w: negative Budget, MinTools or MaxTools", ErrOptions)
	case o.MaxTools > 0 && o.MinTools > o.MaxTools:
		return nil, fmt.Errorf("%w: MinTools %d > MaxTools %d", ErrOptions, o.MinTools, o.MaxTools)
	case o.Search < SearchAuto || o.Search > SearchNever:
		return nil, fmt.Errorf("%w: Search = %d", ErrOptions, o.Search)
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxTools == 0 {
		o.MaxTools = DefaultMaxTools
	}
	r, err := retrieval.New(ix, &o.Retrieval)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	tok := o.Tokenizer
	if tok == nil {
		if tok, err = budget.NewTokenizer("", ""); err != nil {
			return nil, fmt.Errorf("%w: tokenizer: %w", ErrOptions, err)
		}
	}
	o.Tokenizer = tok
	return &Thinker{ix: ix, r: r, tok: tok, opts: o}, nil
}

// Retriever returns the Thinker's retriever: it answers search_tools.
func (t *Thinker) Retriever() *retrieval.Retriever { return t.r }

// Tokenizer returns the tokenizer that counts the budget.
func (t *Thinker) Tokenizer() *budget.Tokenizer { return t.tok }

// Options returns the options in force, defaults filled in.
func (t *Thinker) Options() Options { return t.opts }

// Request is what one step knows.
type Request struct {
	// Query is the conversation's state (task, latest thought, tools used).
	Query retrieval.Query
	// Found names tools found at the previous step (by search_tools, or as
	// close matches of an unknown name): they are offered at this step.
	Found []string
}

// Offered is one tool of a step's request, rendered at its tier.
type Offered struct {
	Tool tool.Tool
	budget.Rendered
	// Score is the retrieval score in [0, 1] (0 when not retrieved).
	Score float64
	// Reason is one of the Reason constants.
	Reason string
}

// Offer is the outcome of one Think step.
type Offer struct {
	// Tools are the tools to send, in request order: by name, search_tools
	// last, so the same set always makes the same request.
	Tools []Offered
	// Tokens is the sum of Tools' tokens.
	Tokens int
	// Ranked is what the retriever returned for the step, best first.
	Ranked []retrieval.Match
	// AllTokens is what sending every tool of the catalog at full tier
	// would cost (AllTools of them): what a plain agent sends.
	AllTokens, AllTools int
	// Everything is set when the whole catalog fit the budget and was
	// offered as it is.
	Everything bool
	// Oversized names a tool offered although it is larger than the whole
	// budget at its cheapest tier, because it was clearly wanted.
	Oversized string
	// Retrieve and Select are how long ranking and fitting took.
	Retrieve, Select time.Duration
}

// Names returns the names of the offered tools, search_tools excluded.
func (o Offer) Names() []string {
	out := make([]string, 0, len(o.Tools))
	for _, t := range o.Tools {
		if t.Reason != ReasonMeta {
			out = append(out, t.Tool.Name)
		}
	}
	return out
}

// Search reports whether search_tools is offered.
func (o Offer) Search() bool {
	return len(o.Tools) > 0 && o.Tools[len(o.Tools)-1].Reason == ReasonMeta
}

// A tool larger than the budget is offered unasked only when the retriever
// is sure of it: ranked first by every signal (score at least
// oversizeMinScore; scores are relative to each list's best) and well
// ahead of the second (oversizeMargin times its score): a clear request
// passes, a vague one does not (docs/measurements.md, "Think step", has
// example scores).
const (
	oversizeMinScore = 0.9
	oversizeMargin   = 1.5
)

// Think chooses the tools of one step.
//
// When the whole catalog fits the budget (and MaxTools), every tool is
// offered at full tier, without search_tools: nothing is hidden that could
// have been shown. Otherwise the retriever's best K tools compete with the
// pinned, sticky and found ones for the budget (budget.Select: pinned,
// sticky and found tools first, the rest compressed before it is dropped),
// and search_tools is offered whenever a tool of the catalog is left out
// (SearchAuto).
//
// A tool larger than the whole budget even at its cheapest tier can never
// compete. It is offered anyway, at its cheapest tier and beyond the
// budget, when it is clearly wanted: found by search_tools (or as a close
// match) at the previous step, or ranked first by the retriever with a
// top score (at least 0.9 of 1) at least 1.5 times the second's. At most one such tool is offered
// per step; the rest of the budget is spent as usual.
func (t *Thinker) Think(ctx context.Context, req Request) (Offer, error) {
	var off Offer
	t0 := time.Now()
	matches, err := t.r.Retrieve(ctx, req.Query)
	if err != nil {
		return off, fmt.Errorf("retrieve: %w", err)
	}
	t1 := time.Now()
	off.Retrieve = t1.Sub(t0)
	off.Ranked = matches
	off.AllTokens, off.AllTools = t.CatalogCost()

	search := t.opts.Search != SearchNever
	if _, clash := t.ix.Get(retrieval.SearchToolName); clash {
		search = false // a real tool has the name: never shadow it
	}
	reason := map[string]string{}
	var cands []budget.Candidate
	add := func(tl tool.Tool, score float64, why string) {
		if _, ok := reason[tl.Name]; ok {
			return
		}
		reason[tl.Name] = why
		cands = append(cands, budget.Candidate{Tool: tl, Score: score, Pinned: why != ReasonRetrieved && why != ReasonAll})
	}
	if off.AllTools > 0 && off.AllTokens <= t.opts.Budget && off.AllTools <= t.opts.MaxTools && t.opts.Search != SearchAlways {
		off.Everything = true
		score := map[string]float64{}
		for _, m := range matches {
			score[m.Tool.Name] = m.Score
		}
		for tl := range t.ix.All() {
			add(tl, max(score[tl.Name], 1e-3), ReasonAll)
		}
		sel, err := budget.Select(t.tok, cands, budget.Budget{Tokens: t.opts.Budget, MaxTools: t.opts.MaxTools})
		if err == nil && len(sel.Tools) == len(cands) {
			t.finish(&off, sel, reason)
			off.Select = time.Since(t1)
			return off, nil
		}
		// The catalog changed since its cost was counted: choose as usual.
		off.Everything = false
		clear(reason)
		cands = cands[:0]
	}
	if search {
		add(retrieval.SearchTool(), 1, ReasonMeta)
	}
	for _, m := range matches {
		switch {
		case m.Pinned:
			add(m.Tool, m.Score, ReasonPinned)
		case m.Sticky:
			add(m.Tool, m.Score, ReasonSticky)
		}
	}
	for _, name := range req.Found {
		if tl, ok := t.ix.Get(name); ok {
			add(tl, 1, ReasonFound)
		}
	}
	for _, m := range matches {
		add(m.Tool, m.Score, ReasonRetrieved)
	}

	// Tools that cannot fit even alone: drop them, but keep the one that
	// is clearly wanted.
	tokens := t.opts.Budget
	var wanted string
	oversized := 0
	kept := cands[:0]
	for _, c := range cands {
		cheap, err := t.cheapest(c.Tool)
		if err != nil || cheap <= t.opts.Budget || reason[c.Tool.Name] == ReasonMeta {
			kept = append(kept, c)
			continue
		}
		if wanted == "" && t.clearlyWanted(c.Tool.Name, reason[c.Tool.Name], matches) {
			wanted = c.Tool.Name
			tokens += cheap
			c.Pinned = true
			kept = append(kept, c)
			continue
		}
		oversized++
	}
	cands = kept
	off.Oversized = wanted

	b := budget.Budget{Tokens: tokens, MinTools: t.opts.MinTools, MaxTools: t.opts.MaxTools}
	if search {
		b.MaxTools++
		b.MinTools = min(b.MinTools+1, b.MaxTools)
	}
	sel, err := budget.Select(t.tok, cands, b)
	if errors.Is(err, budget.ErrBudgetTooSmall) {
		// Too many must-haves: keep the meta-tool and the wanted tool, let
		// the others compete with the best retrieved score.
		for i := range cands {
			if why := reason[cands[i].Tool.Name]; why != ReasonMeta && why != ReasonRetrieved && cands[i].Tool.Name != wanted {
				cands[i].Pinned = false
				cands[i].Score = max(cands[i].Score, 1)
			}
		}
		sel, err = budget.Select(t.tok, cands, b)
	}
	if errors.Is(err, budget.ErrBudgetTooSmall) && search {
		// Not even the meta-tool fits: go without it.
		cands = slices.DeleteFunc(cands, func(c budget.Candidate) bool { return reason[c.Tool.Name] == ReasonMeta })
		b.MaxTools--
		b.MinTools = min(t.opts.MinTools, b.MaxTools)
		search = false
		sel, err = budget.Select(t.tok, cands, b)
	}
	if err == nil && len(sel.Tools) == 0 && oversized > 0 {
		err = fmt.Errorf("%w: all %d candidates are larger than the budget", budget.ErrBudgetTooSmall, oversized)
	}
	if err != nil {
		return off, fmt.Errorf("select tools (budget %d tokens): %w", t.opts.Budget, err)
	}
	if search && t.opts.Search == SearchAuto && len(sel.Tools)-1 >= off.AllTools {
		// Every tool made it in (compressed): nothing to search for.
		cands = slices.DeleteFunc(cands, func(c budget.Candidate) bool { return reason[c.Tool.Name] == ReasonMeta })
		b.MaxTools--
		b.MinTools = min(t.opts.MinTools, b.MaxTools)
		if s, err := budget.Select(t.tok, cands, b); err == nil {
			sel = s
		}
	}
	t.finish(&off, sel, reason)
	off.Select = time.Since(t1)
	return off, nil
}

// clearlyWanted reports whether an oversized tool should be offered: found
// at the last step, or the retriever's first match by a margin.
func (t *Thinker) clearlyWanted(name, why string, matches []retrieval.Match) bool {
	if why == ReasonFound {
		return true
	}
	var ranked []retrieval.Match
	for _, m := range matches {
		if !m.Pinned && !m.Sticky {
			ranked = append(ranked, m)
		}
	}
	if len(ranked) == 0 || ranked[0].Tool.Name != name || ranked[0].Score < oversizeMinScore {
		return false
	}
	return len(ranked) == 1 || ranked[0].Score >= oversizeMargin*ranked[1].Score
}

// cheapest returns a tool's token cost at its cheapest tier.
func (t *Thinker) cheapest(tl tool.Tool) (int, error) {
	best := -1
	for tier := budget.TierFull; tier < budget.NumTiers; tier++ {
		r, err := t.tok.Render(tl, tier)
		if err != nil {
			return 0, err
		}
		if best < 0 || r.Tokens < best {
			best = r.Tokens
		}
	}
	return best, nil
}

// finish fills off from a selection, in request order.
func (t *Thinker) finish(off *Offer, sel budget.Selection, reason map[string]string) {
	picked := slices.Clone(sel.Tools)
	slices.SortFunc(picked, func(x, y budget.Selected) int {
		mx, my := reason[x.Tool.Name] == ReasonMeta, reason[y.Tool.Name] == ReasonMeta
		if mx != my {
			if mx {
				return 1
			}
			return -1
		}
		return cmp.Compare(x.Tool.Name, y.Tool.Name)
	})
	off.Tools = make([]Offered, len(picked))
	off.Tokens = 0
	for i, s := range picked {
		off.Tools[i] = Offered{Tool: s.Tool, Rendered: s.Rendered, Score: s.Score, Reason: reason[s.Tool.Name]}
		off.Tokens += s.Tokens
	}
}

// CatalogCost returns what sending every tool of the index at full tier
// costs (tokens) and how many tools that is (n), as Offer.AllTokens and
// AllTools report it. It is recomputed only when the index's generation
// moves, and then counts only the tools it has not seen (nor found in
// Options.Costs): a step costs no O(catalog) rendering while the catalog
// stays the same. Calling it after the index changes takes the counting
// off the next Think step.
func (t *Thinker) CatalogCost() (tokens, n int) {
	gen := t.ix.Generation()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cost.valid && t.cost.gen == gen {
		return t.cost.tokens, t.cost.tools
	}
	old := t.cost.byHash
	fresh := make(map[string]int, t.ix.Len())
	tokens, n = 0, 0
	id := t.tok.ID()
	for tl := range t.ix.All() {
		n++
		h := tl.Hash
		if h == "" {
			h = tool.ContentHash(tl)
		}
		c, ok := old[h]
		if !ok && t.opts.Costs != nil {
			c, ok = t.opts.Costs.Cost(id, h)
		}
		if !ok {
			if r, err := t.tok.Render(tl, budget.TierFull); err == nil {
				c = r.Tokens
			}
			if t.opts.Costs != nil {
				t.opts.Costs.SetCost(id, h, c)
			}
		}
		fresh[h] = c
		tokens += c
	}
	t.cost = catalogCost{valid: true, gen: gen, tokens: tokens, tools: n, byHash: fresh}
	return tokens, n
}
