package budget

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/toolsift/toolsift/tool"
)

var (
	// ErrBudgetTooSmall reports a budget that cannot hold even one tool, or
	// not the pinned and minimum tools at their cheapest tier.
	ErrBudgetTooSmall = errors.New("budget: budget too small")
	// ErrInvalidBudget reports negative limits or MinTools > MaxTools.
	ErrInvalidBudget = errors.New("budget: invalid budget")
)

// Candidate is a tool offered to Select, with its relevance to the current
// step (higher is better; negative scores count as 0).
type Candidate struct {
	Tool  tool.Tool
	Score float64
	// Pinned tools are always selected (at the cheapest tier if need be).
	Pinned bool
}

// Budget limits a selection.
type Budget struct {
	// Tokens is the most the selected tools may cost together, as counted
	// by CountTool (the per-request and per-tool overheads are not included:
	// subtract ToolsRequestOverhead and n × ToolOverhead* first if the
	// budget is for prompt_tokens).
	Tokens int
	// MinTools is how many tools must be selected at least: the pinned
	// tools, then the best-scored others, at the cheapest tier if need be.
	MinTools int
	// MaxTools caps the number of tools; 0 means no cap.
	MaxTools int
	// Listing, when positive, is the most of Tokens that listings may
	// take: tools sent at TierName (the name and a line; the model asks
	// for the schema). Select chooses the tools with schemas as usual,
	// lists the best of those left out in what remains, then takes
	// schemas away from the lowest-scored tools up (they stay, listed) to
	// list more of the best left out, while the listings fit in Listing:
	// a better-scored tool keeps its schema when a worse one loses its.
	// Pinned and minimum tools are never listed. Set it only when the
	// model can ask for a listed tool's schema (a step that offers
	// search_tools); 0 lists nothing.
	Listing int
}

// Selected is a chosen Candidate, rendered at its tier.
type Selected struct {
	Candidate
	Rendered
}

// Selection is the result of Select.
type Selection struct {
	// Tools are the chosen tools, sorted by name: the order depends only
	// on the set, so the same set gives the same request prefix and prompt
	// caches keep hitting.
	Tools []Selected
	// Tokens is the sum of Tools[i].Tokens; never more than Budget.Tokens.
	Tokens int
	// Value is the relevance kept: Σ max(score, 0) × tier quality.
	Value float64
	// Dropped names the candidates left out, best-scored first.
	Dropped []string
	// Skipped names the candidates Select could not render (their input
	// schema is not a JSON object schema: CountTool says why), sorted. They
	// are left out of the selection instead of failing it, so that one bad
	// tool does not cost every step that retrieves it.
	Skipped []string
}

// item is a deduplicated candidate with its options, one per tier.
type item struct {
	cand   Candidate
	weight float64
	opts   [NumTiers]Rendered
	forced bool
}

func (it *item) value(tier Tier) float64 { return it.weight * tier.quality() }

// schemaTiers are the tiers with a schema, 0 to schemaTiers-1: all but
// TierName.
const schemaTiers = TierName

// cheapest returns the tier with the fewest tokens (the least compressed
// one on ties: same cost, more value).
func (it *item) cheapest() Tier {
	best := TierFull
	for t := TierFull + 1; t < schemaTiers; t++ {
		if it.opts[t].Tokens < it.opts[best].Tokens {
			best = t
		}
	}
	return best
}

// none marks an item that is not selected.
const none Tier = -1

// Select chooses which candidates to send and at which tier, so that their
// total cost fits b.Tokens and the relevance kept, Σ score × the tier's quality,
// is as high as it can find.
//
// Candidates with the same tool name are merged (highest score, pinned if
// any is). Pinned tools and the MinTools best others are placed first at
// their cheapest tier; ErrBudgetTooSmall if even that does not fit, or if
// nothing fits at all.
//
// The rest is a multiple-choice knapsack (each tool: left out, or one of the
// four tiers). Select solves it with the classic greedy for that problem:
// for each tool take the upper convex hull of its (tokens, value) options,
// then apply the hull steps of all tools in order of value gained per token
// while they fit: this adds a useful tool in compressed form before it
// spends tokens expanding an already-chosen one, so the tail is compressed
// rather than dropped. A fill pass then spends what is left, best-scored
// tools first, on the best tier that still fits. Select also computes two
// simple plans, "best-scored first at the best tier that fits" and "top-k
// at full until full" (the usual approach), plus the best single tool, and
// returns the plan with the highest value, so it is never worse than any of
// them; with no pinned or minimum tools its value is at least half of the
// optimum (the LP-greedy bound). Against the exact optimum (brute force) on
// small random instances (TestSelectNearOptimal) it is usually optimal and
// close to it otherwise (docs/measurements.md, "Budget selection").
//
// A candidate whose schema cannot be sent (see CountTool) is skipped and named
// in Selection.Skipped; it does not fail the selection.
//
// Select is deterministic: the result depends only on the set of candidates
// (their order does not matter; ties break by name).
func Select(tok *Tokenizer, cands []Candidate, b Budget) (Selection, error) {
	if b.Tokens < 0 || b.MinTools < 0 || b.MaxTools < 0 || b.Listing < 0 || (b.MaxTools > 0 && b.MinTools > b.MaxTools) {
		return Selection{}, fmt.Errorf("%w: %+v", ErrInvalidBudget, b)
	}
	items, skipped := prepare(tok, cands)
	if len(items) == 0 {
		return Selection{Skipped: skipped}, nil
	}

	// Forced items: pinned, then the best-scored others up to MinTools.
	nForced := 0
	for _, it := range items {
		if it.cand.Pinned {
			it.forced = true
			nForced++
		}
	}
	for _, it := range items {
		if nForced >= b.MinTools {
			break
		}
		if !it.forced {
			it.forced = true
			nForced++
		}
	}
	if b.MaxTools > 0 && nForced > b.MaxTools {
		return Selection{}, fmt.Errorf("%w: %d pinned tools but MaxTools is %d", ErrBudgetTooSmall, nForced, b.MaxTools)
	}
	base := make([]Tier, len(items))
	baseTokens := 0
	for i, it := range items {
		base[i] = none
		if it.forced {
			base[i] = it.cheapest()
			baseTokens += it.opts[base[i]].Tokens
		}
	}
	if baseTokens > b.Tokens {
		return Selection{}, fmt.Errorf("%w: %d tokens cannot hold the %d pinned and minimum tools: they need %d at their cheapest tier",
			ErrBudgetTooSmall, b.Tokens, nForced, baseTokens)
	}
	if nForced == 0 {
		cheap := items[0]
		for _, it := range items[1:] {
			if it.opts[it.cheapest()].Tokens < cheap.opts[cheap.cheapest()].Tokens {
				cheap = it
			}
		}
		if need := cheap.opts[cheap.cheapest()].Tokens; need > b.Tokens {
			return Selection{}, fmt.Errorf("%w: %d tokens cannot hold even one tool: the cheapest, %q, needs %d",
				ErrBudgetTooSmall, b.Tokens, cheap.cand.Tool.Name, need)
		}
	}

	p := &planner{items: items, budget: b}
	plans := [][]Tier{
		p.fill(p.hullGreedy(base)),
		p.fill(p.bestFit(base)),
		p.fill(p.topKFull(base)),
	}
	if nForced == 0 {
		plans = append(plans, p.fill(p.bestSingle(base)))
	}
	best := plans[0]
	for _, pl := range plans[1:] {
		if p.value(pl) > p.value(best) {
			best = pl
		}
	}
	if b.Listing > 0 {
		best = p.fill(p.list(best, b.Listing))
	}
	sel := p.selection(best)
	sel.Skipped = skipped
	return sel, nil
}

// prepare merges duplicate names, renders every tier and sorts the items by
// score (descending), then name. It returns the names of the candidates it
// could not render, sorted, apart.
func prepare(tok *Tokenizer, cands []Candidate) ([]*item, []string) {
	byName := make(map[string]*item, len(cands))
	items := make([]*item, 0, len(cands))
	bad := map[string]bool{}
	for _, c := range cands {
		if bad[c.Tool.Name] {
			continue
		}
		if it, ok := byName[c.Tool.Name]; ok {
			it.cand.Pinned = it.cand.Pinned || c.Pinned
			if c.Score > it.cand.Score {
				it.cand.Score = c.Score
			}
			continue
		}
		it := &item{cand: c}
		if err := tok.render(c.Tool, &it.opts); err != nil {
			bad[c.Tool.Name] = true
			continue
		}
		byName[c.Tool.Name] = it
		items = append(items, it)
	}
	for _, it := range items {
		// A tiny floor so that zero-scored tools still fill spare room.
		it.weight = relevance(it.cand.Score) + 1e-9
	}
	slices.SortFunc(items, func(a, b *item) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.cand.Tool.Name, b.cand.Tool.Name)
	})
	var skipped []string
	if len(bad) > 0 {
		skipped = slices.Sorted(maps.Keys(bad))
	}
	return items, skipped
}

type planner struct {
	items  []*item
	budget Budget
}

func (p *planner) cost(plan []Tier) (tokens, count int) {
	for i, t := range plan {
		if t != none {
			tokens += p.items[i].opts[t].Tokens
			count++
		}
	}
	return
}

func (p *planner) value(plan []Tier) float64 {
	v := 0.0
	for i, t := range plan {
		if t != none {
			v += p.items[i].value(t)
		}
	}
	return v
}

func (p *planner) canAdd(count int) bool { return p.budget.MaxTools == 0 || count < p.budget.MaxTools }

// point is one option of an item on its (tokens, value) plane.
type point struct {
	tier   Tier
	tokens int
	value  float64
}

// hull returns the upper convex hull of the item's options that are better
// than from, starting at from: the steps in decreasing value per token.
func (p *planner) hull(it *item, from Tier) []point {
	start := point{tier: none}
	if from != none {
		start = point{from, it.opts[from].Tokens, it.value(from)}
	}
	var pts []point
	for t := range schemaTiers {
		o := point{t, it.opts[t].Tokens, it.value(t)}
		if o.tokens > p.budget.Tokens || o.value <= start.value {
			continue
		}
		pts = append(pts, o)
	}
	slices.SortFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.tokens, b.tokens); c != 0 {
			return c
		}
		return cmp.Compare(b.value, a.value)
	})
	h := []point{start}
	for _, o := range pts {
		last := h[len(h)-1]
		if o.value <= last.value {
			continue // dominated: costs at least as much for no more value
		}
		for len(h) >= 2 && slope(h[len(h)-2], h[len(h)-1]) <= slope(h[len(h)-1], o) {
			h = h[:len(h)-1]
		}
		h = append(h, o)
	}
	return h
}

func slope(a, b point) float64 {
	dt := b.tokens - a.tokens
	if dt <= 0 {
		return math.Inf(1)
	}
	return (b.value - a.value) / float64(dt)
}

// step is the move of one item from one hull point to the next.
type step struct {
	item     int
	hull     []point
	at       int // index in hull of the step's end point
	eff      float64
	weight   float64
	name     string
	fromNone bool
}

type stepHeap []step

func (h stepHeap) Len() int { return len(h) }
func (h stepHeap) Less(i, j int) bool {
	if h[i].eff != h[j].eff {
		return h[i].eff > h[j].eff
	}
	if h[i].weight != h[j].weight {
		return h[i].weight > h[j].weight
	}
	return h[i].name < h[j].name
}
func (h stepHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *stepHeap) Push(x any)   { *h = append(*h, x.(step)) }
func (h *stepHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (p *planner) newStep(i int, h []point, at int) step {
	return step{
		item: i, hull: h, at: at,
		eff:      slope(h[at-1], h[at]),
		weight:   p.items[i].weight,
		name:     p.items[i].cand.Tool.Name,
		fromNone: h[at-1].tier == none,
	}
}

// hullGreedy applies hull steps of all items in decreasing value per token
// while they fit.
func (p *planner) hullGreedy(base []Tier) []Tier {
	plan := slices.Clone(base)
	used, count := p.cost(plan)
	var h stepHeap
	for i, it := range p.items {
		if hl := p.hull(it, plan[i]); len(hl) > 1 {
			h = append(h, p.newStep(i, hl, 1))
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		s := heap.Pop(&h).(step)
		from, to := s.hull[s.at-1], s.hull[s.at]
		if s.fromNone && !p.canAdd(count) {
			continue
		}
		if used-from.tokens+to.tokens > p.budget.Tokens {
			continue // this item's later steps are dearer still: drop them
		}
		used += to.tokens - from.tokens
		if s.fromNone {
			count++
		}
		plan[s.item] = to.tier
		if s.at+1 < len(s.hull) {
			heap.Push(&h, p.newStep(s.item, s.hull, s.at+1))
		}
	}
	return plan
}

// bestFit walks the items best-scored first and gives each the best tier
// that still fits: compress the tail before dropping it.
func (p *planner) bestFit(base []Tier) []Tier {
	plan := slices.Clone(base)
	used, count := p.cost(plan)
	for i, it := range p.items {
		cur := plan[i]
		if cur == none && !p.canAdd(count) {
			continue
		}
		curTokens := 0
		if cur != none {
			curTokens = it.opts[cur].Tokens
		}
		for t := range schemaTiers {
			if cur != none && t >= cur {
				break
			}
			if used-curTokens+it.opts[t].Tokens <= p.budget.Tokens {
				used += it.opts[t].Tokens - curTokens
				if cur == none {
					count++
				}
				plan[i] = t
				break
			}
		}
	}
	return plan
}

// topKFull is the usual approach: best-scored first, at full, while it fits.
func (p *planner) topKFull(base []Tier) []Tier {
	plan := slices.Clone(base)
	used, count := p.cost(plan)
	for i, it := range p.items {
		if plan[i] != none || !p.canAdd(count) {
			continue
		}
		if used+it.opts[TierFull].Tokens > p.budget.Tokens {
			break
		}
		used += it.opts[TierFull].Tokens
		count++
		plan[i] = TierFull
	}
	return plan
}

// bestSingle is the one option with the highest value that fits alone.
func (p *planner) bestSingle(base []Tier) []Tier {
	plan := slices.Clone(base)
	bi, bt, bv := -1, none, -1.0
	for i, it := range p.items {
		for t := range schemaTiers {
			if it.opts[t].Tokens <= p.budget.Tokens && it.value(t) > bv {
				bi, bt, bv = i, t, it.value(t)
			}
		}
	}
	if bi >= 0 {
		plan[bi] = bt
	}
	return plan
}

// list spends at most most tokens on listings (TierName; only of tools
// whose every schema costs more): first what the plan leaves, on the
// best-scored tools it leaves out; then, from the
// lowest-scored tool with a schema up, it takes schemas away (the tool
// stays, listed) to list more of the best left out, while there are any
// and the listings fit in most. Pinned and minimum tools keep theirs, and
// so does the best-scored tool with a schema.
func (p *planner) list(plan []Tier, most int) []Tier {
	used, count := p.cost(plan)
	listed := 0
	next := 0 // the best-scored tool left out not yet listed
	addListed := func() {
		for ; next < len(p.items); next++ {
			if plan[next] != none {
				continue
			}
			it := p.items[next]
			n := it.opts[TierName].Tokens
			if n >= it.opts[it.cheapest()].Tokens {
				continue // a schema costs no more: listing it saves nothing
			}
			if !p.canAdd(count) || used+n > p.budget.Tokens || listed+n > most {
				return
			}
			plan[next] = TierName
			used, listed, count = used+n, listed+n, count+1
		}
	}
	// The best-scored tool with a schema that was not a must-have keeps it.
	first := len(p.items)
	for i, t := range plan {
		if t != none && !p.items[i].forced {
			first = i
			break
		}
	}
	addListed()
	for worst := len(p.items) - 1; worst >= 0 && next < len(p.items) && p.canAdd(count); worst-- {
		it := p.items[worst]
		if worst == first || plan[worst] == none || plan[worst] == TierName || it.forced {
			continue
		}
		n := it.opts[TierName].Tokens
		if n >= it.opts[plan[worst]].Tokens {
			continue // its listing would free nothing
		}
		if listed+n > most {
			break
		}
		used += n - it.opts[plan[worst]].Tokens
		listed += n
		plan[worst] = TierName
		addListed()
	}
	return plan
}

// fill spends the tokens a plan leaves, best-scored items first, on the
// option with the highest value that fits (adding or upgrading).
func (p *planner) fill(plan []Tier) []Tier {
	used, count := p.cost(plan)
	for i, it := range p.items {
		cur := plan[i]
		if cur == none && !p.canAdd(count) {
			continue
		}
		curTokens, curValue := 0, 0.0
		if cur != none {
			curTokens, curValue = it.opts[cur].Tokens, it.value(cur)
		}
		bt, bv := none, curValue
		for t := range schemaTiers {
			if v := it.value(t); v > bv && used-curTokens+it.opts[t].Tokens <= p.budget.Tokens {
				bt, bv = t, v
			}
		}
		if bt != none {
			used += it.opts[bt].Tokens - curTokens
			if cur == none {
				count++
			}
			plan[i] = bt
		}
	}
	return plan
}

func (p *planner) selection(plan []Tier) Selection {
	var s Selection
	for i, it := range p.items {
		t := plan[i]
		if t == none {
			s.Dropped = append(s.Dropped, it.cand.Tool.Name)
			continue
		}
		s.Tools = append(s.Tools, Selected{Candidate: it.cand, Rendered: it.opts[t]})
		s.Tokens += it.opts[t].Tokens
		s.Value += relevance(it.cand.Score) * t.quality()
	}
	slices.SortFunc(s.Tools, func(a, b Selected) int { return cmp.Compare(a.Tool.Name, b.Tool.Name) })
	return s
}

// relevance is a score as Select counts it: negative and NaN are 0.
func relevance(score float64) float64 {
	if math.IsNaN(score) || score < 0 {
		return 0
	}
	return score
}
