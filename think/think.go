package think

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// DefaultPack is how many ranked tools beyond K compete for the budget
	// by default (Options.Pack), measured on the public datasets and the
	// paraphrase sets (docs/measurements.md, "Budget packing"): it raises
	// the gold kept in the budget on every set and lowers it on none, for
	// the tokens left unused by K tools.
	DefaultPack = 30
	// defaultMaxTools is the most tools in one request: OpenAI rejects more
	// than 128.
	defaultMaxTools = 128
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
	ReasonKept      = "kept"      // offered before and kept in place for the prompt cache (PolicyStable)
)

// Options configure a Thinker. The zero value (or nil) gives the defaults.
type Options struct {
	// Budget is the most tokens the tools offered at one step may cost, as
	// budget.Tokenizer.CountTool counts them. Default DefaultBudget. A tool
	// that is larger than the whole budget even at its cheapest tier may
	// still be offered when it is clearly wanted (see Thinker.Think).
	Budget int
	// MinTools and MaxTools bound the number of tools offered at one step
	// (besides search_tools). Defaults 0 and 128, the most OpenAI accepts.
	MinTools, MaxTools int
	// Search says when to offer the search_tools meta-tool.
	Search SearchMode
	// Retrieval configures the ranking (K, mode, pinned tools, ...). Its
	// K, default DefaultK, bounds how many ranked tools a step considers.
	Retrieval retrieval.Options
	// Tokenizer counts tokens; nil means o200k_base.
	Tokenizer *budget.Tokenizer
	// Policy says how a step's list relates to the previous step's
	// (Request.Previous): PolicyStable, the default, keeps the tools
	// already offered in place so that the provider's prompt cache keeps
	// hitting; PolicyFresh chooses afresh at every step.
	Policy Policy
	// Prices is the price model PolicyStable weighs evictions with;
	// zero means budget.DefaultPrices.
	Prices budget.Prices
	// Pack packs the budget: Pack more ranked tools than Retrieval.K
	// compete for it, ranked as deep as K alone would rank
	// (Retrieval.Depth, default max(50, 4K)), so the ranking does not
	// move. budget.Select compresses before it drops, so when the best
	// tools are large, more of the likely ones fit at a cheaper tier, and
	// when they are small the budget left over holds more of the next
	// ones; Offer.Ranked then holds K+Pack tools. What the selection
	// leaves of the budget is then filled with the tools ranked after
	// those, as deep as the ranking goes (Retrieval.Depth), each at the
	// best tier that still fits, and no tool selected is dropped or
	// compressed for them: a catalog of small tools fills its budget.
	// Never over the budget. Default DefaultPack; NoPack turns packing off
	// (only K tools compete, and a step whose K tools are small sends
	// fewer tokens).
	Pack   int
	NoPack bool
	// Listing turns listings on (off by default): at a step that offers
	// search_tools, the tools left out are listed (budget.TierName: the
	// name and one line, the parameters one search away) in up to half
	// the budget; the lowest-scored tools give their schemas up first, so
	// the best keep theirs, and a step names more of what it ranked, but
	// fewer of its tools come with a schema, callable at once: off by
	// default because the gold sent with its schema falls on every set
	// (docs/measurements.md, "Listings").
	Listing bool
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
	// compete is how many ranked tools (pinned and sticky ones aside)
	// compete for the budget, K+Pack; the retriever returns more, as deep
	// as its Depth, to fill what the selection leaves (fill).
	compete int

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
	case o.Pack < 0:
		return nil, fmt.Errorf("%w: Pack = %d", ErrOptions, o.Pack)
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.MaxTools == 0 {
		o.MaxTools = defaultMaxTools
	}
	switch {
	case o.NoPack:
		o.Pack = 0
	case o.Pack == 0:
		o.Pack = DefaultPack
	}
	ro := o.Retrieval
	compete := 0
	if o.Pack > 0 && ro.K >= 0 { // a negative K is retrieval's to refuse
		k := ro.K
		if k == 0 {
			k = DefaultK
		}
		if ro.Depth == 0 {
			ro.Depth = max(50, 4*k)
		}
		// K+Pack compete; the rest of the Depth fill what is left. The
		// ranking is as deep as K alone would rank it either way.
		compete = k + o.Pack
		ro.K = max(compete, ro.Depth)
	}
	r, err := retrieval.New(ix, &ro)
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
	return &Thinker{ix: ix, r: r, tok: tok, opts: o, compete: compete}, nil
}

// Retriever returns the Thinker's retriever: it answers search_tools.
func (t *Thinker) Retriever() *retrieval.Retriever { return t.r }

// Index returns the index the Thinker ranks.
func (t *Thinker) Index() *toolindex.Index { return t.ix }

// Options returns the options in force, defaults filled in (its Tokenizer
// is the one that counts the budget): a Thinker for another ranking mode
// over the same index is think.New(t.Index(), &opts) with opts changed.
func (t *Thinker) Options() Options { return t.opts }

// WithPinned returns a Thinker over the same index with the same options
// but for the pinned tools: names (Options.Retrieval.Pinned) in place of
// t's own. t is unchanged.
func (t *Thinker) WithPinned(names []string) (*Thinker, error) {
	o := t.opts
	o.Retrieval.Pinned = slices.Clone(names)
	return New(t.ix, &o)
}

// Request is what one step knows.
type Request struct {
	// Query is the conversation's state (task, latest thought, tools used).
	Query retrieval.Query
	// Found names tools found at the previous step (by search_tools, or as
	// close matches of an unknown name): they are offered at this step.
	Found []string
	// Previous is the previous step's Offer.Tools, in request order, as
	// they were sent: under PolicyStable they keep their place and bytes.
	// Empty at a run's first step.
	Previous []Offered
	// MessageTokens is what the conversation sent with Previous cost in
	// tokens: the part of the prompt after the tools, re-billed at full
	// price when the tool list before it changes.
	MessageTokens int
	// Steps is how many steps the run has taken; PolicyStable expects as
	// many more when it weighs keeping a stale tool against evicting it.
	Steps int
}

// Offered is one tool of a step's request: a budget.Selected (the tool,
// its retrieval score in [0, 1], 0 when not retrieved, and its rendering
// at its tier) with why it is offered.
type Offered struct {
	budget.Selected
	// Reason is one of the Reason constants.
	Reason string
}

// Offer is the outcome of one Think step.
type Offer struct {
	// Tools are the tools to send, in request order: by name, search_tools
	// last, so the same set always makes the same request.
	Tools []Offered
	// Tokens is the sum of Tools' tokens; Budget is the step's budget
	// (Options.Budget), which Tokens exceeds only for an Oversized tool.
	Tokens, Budget int
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
	// Evicted are the tools of Request.Previous that this step dropped,
	// and why (PolicyStable; PolicyFresh drops without saying).
	Evicted []Eviction
	// Retrieve and Select are how long ranking and fitting took.
	Retrieve, Select time.Duration
	// Incomplete, when not nil, names the servers whose tools the step
	// could not consider: still connecting, or failed. Think leaves it
	// nil; a Toolset over a Hub sets it (see Incomplete).
	Incomplete *Incomplete
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

// WithSchema returns the names of the offered tools sent with their
// parameters (every tier but budget.TierName): callable at once.
func (o Offer) WithSchema() []string {
	out := make([]string, 0, len(o.Tools))
	for _, t := range o.Tools {
		if t.Reason != ReasonMeta && t.Tier != budget.TierName {
			out = append(out, t.Tool.Name)
		}
	}
	return out
}

// Listed returns the names of the offered tools listed (budget.TierName:
// the name and a line, no parameters): callable after a search_tools step
// gives their schemas.
func (o Offer) Listed() []string {
	var out []string
	for _, t := range o.Tools {
		if t.Reason != ReasonMeta && t.Tier == budget.TierName {
			out = append(out, t.Tool.Name)
		}
	}
	return out
}

// HasSearchTool reports whether search_tools is offered.
func (o Offer) HasSearchTool() bool {
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

// Think chooses the tools of one step. It is one plan in five stages:
//
//  1. retrieve: rank the catalog for the step (Offer.Ranked);
//  2. candidates: when the whole catalog fits the budget (and MaxTools),
//     every tool, at full tier and without search_tools: nothing is hidden
//     that could have been shown. Otherwise the search_tools meta-tool, the
//     pinned, sticky and found tools (which must be offered) and the
//     retriever's best K;
//  3. select: budget.Select fits them into the budget (the must-haves
//     first, the rest compressed before it is dropped). When the
//     must-haves do not fit, they compete on score; when not even
//     search_tools fits, it goes;
//  4. meta-tool: search_tools stays whenever a tool of the catalog is left
//     out (SearchAuto), and goes, its tokens given to the others, when
//     every tool made it in;
//  5. request order: budget.Select's order (by name), search_tools last,
//     so the same set always makes the same request.
//
// A tool larger than the whole budget even at its cheapest tier can never
// compete. It is offered anyway, at its cheapest tier and beyond the
// budget, when it is clearly wanted: found by search_tools (or as a close
// match) at the previous step, or ranked first by the retriever with a
// top score (at least 0.9 of 1) at least 1.5 times the second's. At most
// one such tool is offered per step; the rest of the budget is spent as
// usual.
func (t *Thinker) Think(ctx context.Context, req Request) (Offer, error) {
	off := Offer{Budget: t.opts.Budget}
	start := time.Now()
	ranked, err := t.r.Retrieve(ctx, req.Query)
	if err != nil {
		return off, fmt.Errorf("retrieve: %w", err)
	}
	retrieved := time.Now()
	off.Retrieve = retrieved.Sub(start)
	ranked, rest := t.split(ranked)
	off.Ranked = ranked
	off.AllTokens, off.AllTools = t.CatalogCost()

	var sel budget.Selection
	var reason map[string]string
	if t.everythingFits(off) {
		sel, reason, off.Everything = t.selectEverything(ranked)
	}
	if !off.Everything {
		p := t.candidates(req, ranked)
		off.Oversized = p.wanted
		if sel, err = t.fit(p, off.AllTools); err != nil {
			return off, fmt.Errorf("select tools (budget %d tokens): %w", t.opts.Budget, err)
		}
		sel = t.fill(p, sel, rest, off.AllTools)
		reason = p.reason
	}
	off.Tools, off.Tokens = requestOrder(sel, reason)
	if t.opts.Policy == PolicyStable && len(req.Previous) > 0 {
		t.keepStable(req, &off)
	}
	off.Select = time.Since(retrieved)
	return off, nil
}

// split cuts what the retriever returned (the pinned and sticky tools,
// then the ranked ones) into the step's ranking, the pinned and sticky
// tools and the compete best ranked ones, and the ranked ones after them,
// which only fill what the selection leaves of the budget.
func (t *Thinker) split(ms []retrieval.Match) (ranked, rest []retrieval.Match) {
	if t.compete == 0 {
		return ms, nil
	}
	n := 0
	for i, m := range ms {
		if m.Pinned || m.Sticky {
			continue
		}
		if n == t.compete {
			return ms[:i:i], ms[i:]
		}
		n++
	}
	return ms, nil
}

// fill adds to sel, which fits p's budget, the tools of rest (best first)
// that fit in what it leaves, each at the best tier with a schema that
// still fits, while MaxTools allows; the tools sel holds keep their tier.
// When every tool of the catalog (allTools) is then sent, search_tools
// goes (SearchAuto). The result is in name order, as budget.Select's.
func (t *Thinker) fill(p *plan, sel budget.Selection, rest []retrieval.Match, allTools int) budget.Selection {
	left := p.b.Tokens - sel.Tokens
	if len(rest) == 0 || left <= 0 || p.b.Listing > 0 {
		return sel
	}
	maxTools := p.b.MaxTools
	if maxTools == 0 {
		maxTools = int(^uint(0) >> 1)
	}
	added := false
	for _, m := range rest {
		if len(sel.Tools) >= maxTools || left <= 0 {
			break
		}
		if _, ok := p.reason[m.Tool.Name]; ok {
			continue
		}
		var best budget.Rendered
		found := false
		for tier := budget.TierFull; tier <= budget.TierMinimal; tier++ {
			r, err := t.tok.CountTool(m.Tool, tier)
			if err != nil {
				break // a schema that cannot be sent: budget.Select skips it too
			}
			if r.Tokens <= left {
				best, found = r, true
				break
			}
		}
		if !found {
			continue
		}
		p.reason[m.Tool.Name] = ReasonRetrieved
		sel.Tools = append(sel.Tools, budget.Selected{Candidate: budget.Candidate{Tool: m.Tool, Score: m.Score}, Rendered: best})
		sel.Tokens += best.Tokens
		left -= best.Tokens
		added = true
	}
	if !added {
		return sel
	}
	if p.search && t.opts.Search == SearchAuto && len(sel.Tools)-1 >= allTools {
		// Every tool made it in: nothing to search for.
		sel.Tools = slices.DeleteFunc(sel.Tools, func(s budget.Selected) bool {
			if p.reason[s.Tool.Name] == ReasonMeta {
				sel.Tokens -= s.Tokens
				return true
			}
			return false
		})
		p.search = false
	}
	slices.SortFunc(sel.Tools, func(a, b budget.Selected) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return sel
}

// everythingFits reports whether the whole catalog, as last counted, fits
// the budget and MaxTools, and may be offered without search_tools.
func (t *Thinker) everythingFits(off Offer) bool {
	return off.AllTools > 0 && off.AllTokens <= t.opts.Budget && off.AllTools <= t.opts.MaxTools && t.opts.Search != SearchAlways
}

// selectEverything offers every tool of the catalog at full tier. It
// reports false when the catalog changed since its cost was counted and
// no longer fits: the step then chooses as usual.
func (t *Thinker) selectEverything(ranked []retrieval.Match) (budget.Selection, map[string]string, bool) {
	score := map[string]float64{}
	for _, m := range ranked {
		score[m.Tool.Name] = m.Score
	}
	reason := map[string]string{}
	var cands []budget.Candidate
	for tl := range t.ix.All() {
		if _, dup := reason[tl.Name]; !dup {
			reason[tl.Name] = ReasonAll
			cands = append(cands, budget.Candidate{Tool: tl, Score: max(score[tl.Name], 1e-3)})
		}
	}
	sel, err := budget.Select(t.tok, cands, budget.Budget{Tokens: t.opts.Budget, MaxTools: t.opts.MaxTools})
	if err != nil || len(sel.Tools) != len(cands) {
		return budget.Selection{}, nil, false
	}
	return sel, reason, true
}

// plan is what competes for one step's budget.
type plan struct {
	cands  []budget.Candidate
	reason map[string]string // by tool name: one of the Reason constants
	// search is set while search_tools is among the candidates.
	search bool
	// wanted names the oversized tool offered beyond the budget, if any;
	// oversized counts those left out.
	wanted    string
	oversized int
	b         budget.Budget
}

// candidates lists the tools that compete for the budget, each once, with
// why: search_tools, the pinned and sticky tools, the found ones, then the
// ranked ones. Oversized tools are left out, but for one that is clearly
// wanted, which is pinned and given its cheapest cost beyond the budget.
func (t *Thinker) candidates(req Request, ranked []retrieval.Match) *plan {
	p := &plan{reason: map[string]string{}}
	add := func(tl tool.Tool, score float64, why string) {
		if _, ok := p.reason[tl.Name]; !ok {
			p.reason[tl.Name] = why
			p.cands = append(p.cands, budget.Candidate{Tool: tl, Score: score, Pinned: why != ReasonRetrieved})
		}
	}
	if t.opts.Search != SearchNever {
		if _, clash := t.ix.Get(SearchToolName); !clash { // never shadow a real tool of that name
			p.search = true
			add(SearchTool(), 1, ReasonMeta)
		}
	}
	for _, m := range ranked {
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
	for _, m := range ranked {
		add(m.Tool, m.Score, ReasonRetrieved)
	}

	tokens := t.opts.Budget
	kept := p.cands[:0]
	for _, c := range p.cands {
		why := p.reason[c.Tool.Name]
		cheap, err := t.cheapest(c.Tool)
		if err != nil || cheap <= t.opts.Budget || why == ReasonMeta {
			kept = append(kept, c)
			continue
		}
		if p.wanted == "" && t.clearlyWanted(c.Tool.Name, why, ranked) {
			p.wanted = c.Tool.Name
			tokens += cheap
			c.Pinned = true
			kept = append(kept, c)
			continue
		}
		p.oversized++
	}
	p.cands = kept
	p.b = budget.Budget{Tokens: tokens, MinTools: t.opts.MinTools, MaxTools: t.opts.MaxTools}
	if p.search {
		// A listed tool's schema is one search away.
		p.b.Listing = t.listing(tokens, true)
		p.b.MaxTools++
		p.b.MinTools = min(p.b.MinTools+1, p.b.MaxTools)
	}
	return p
}

// dropSearch takes search_tools out of the plan.
func (p *plan) dropSearch(minTools int) {
	p.cands = slices.DeleteFunc(p.cands, func(c budget.Candidate) bool { return p.reason[c.Tool.Name] == ReasonMeta })
	p.b.MaxTools--
	p.b.MinTools = min(minTools, p.b.MaxTools)
	p.b.Listing = 0
	p.search = false
}

// fit selects the plan's tools within its budget (stages 3 and 4 of
// Think): relaxed while it does not fit, then without search_tools when
// every tool of the catalog (allTools) made it in.
func (t *Thinker) fit(p *plan, allTools int) (budget.Selection, error) {
	sel, err := budget.Select(t.tok, p.cands, p.b)
	if errors.Is(err, budget.ErrBudgetTooSmall) {
		// Too many must-haves: keep search_tools and the wanted tool, let
		// the others compete with the best retrieved score.
		for i, c := range p.cands {
			if why := p.reason[c.Tool.Name]; why != ReasonMeta && why != ReasonRetrieved && c.Tool.Name != p.wanted {
				p.cands[i].Pinned = false
				p.cands[i].Score = max(c.Score, 1)
			}
		}
		sel, err = budget.Select(t.tok, p.cands, p.b)
	}
	if errors.Is(err, budget.ErrBudgetTooSmall) && p.search {
		// Not even search_tools fits: go without it.
		p.dropSearch(t.opts.MinTools)
		sel, err = budget.Select(t.tok, p.cands, p.b)
	}
	if err == nil && len(sel.Tools) == 0 && p.oversized > 0 {
		err = fmt.Errorf("%w: all %d candidates are larger than the budget", budget.ErrBudgetTooSmall, p.oversized)
	}
	if err != nil {
		return sel, err
	}
	if p.search && t.opts.Search == SearchAuto && len(sel.Tools)-1 >= allTools {
		// Every tool made it in (compressed): nothing to search for.
		p.dropSearch(t.opts.MinTools)
		if s, err := budget.Select(t.tok, p.cands, p.b); err == nil {
			sel = s
		}
	}
	return sel, nil
}

// clearlyWanted reports whether an oversized tool should be offered: found
// at the last step, or the retriever's first match by a margin.
func (t *Thinker) clearlyWanted(name, why string, ranked []retrieval.Match) bool {
	if why == ReasonFound {
		return true
	}
	var plain []retrieval.Match
	for _, m := range ranked {
		if !m.Pinned && !m.Sticky {
			plain = append(plain, m)
		}
	}
	if len(plain) == 0 || plain[0].Tool.Name != name || plain[0].Score < oversizeMinScore {
		return false
	}
	return len(plain) == 1 || plain[0].Score >= oversizeMargin*plain[1].Score
}

// cheapest returns a tool's token cost at its cheapest tier with a schema
// (TierName, a listing, is not a way to offer an oversized tool: the
// oversize rule decides those).
func (t *Thinker) cheapest(tl tool.Tool) (int, error) {
	best := -1
	for tier := budget.TierFull; tier <= budget.TierMinimal; tier++ {
		r, err := t.tok.CountTool(tl, tier)
		if err != nil {
			return 0, err
		}
		if best < 0 || r.Tokens < best {
			best = r.Tokens
		}
	}
	return best, nil
}

// requestOrder is the one place that orders a request: budget.Select's
// order (by name), with search_tools moved last.
func requestOrder(sel budget.Selection, reason map[string]string) ([]Offered, int) {
	out := make([]Offered, 0, len(sel.Tools))
	var meta []Offered
	tokens := 0
	for _, s := range sel.Tools {
		o := Offered{Selected: s, Reason: reason[s.Tool.Name]}
		if o.Reason == ReasonMeta {
			meta = append(meta, o)
		} else {
			out = append(out, o)
		}
		tokens += s.Tokens
	}
	return append(out, meta...), tokens
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
			if r, err := t.tok.CountTool(tl, budget.TierFull); err == nil {
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

// listingShare is the most of a step's budget that listings may take
// (Options.Listing): half, so the schemas keep at least the other half.
const listingShare = 0.5

// listing is the most of a budget of tokens that listings may take at a
// step that offers search_tools (search): none without it, or unless
// Options.Listing is set.
func (t *Thinker) listing(tokens int, search bool) int {
	if !search || !t.opts.Listing {
		return 0
	}
	return int(float64(tokens) * listingShare)
}
