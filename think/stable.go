package think

import (
	"slices"
	"strconv"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

// Policy says how one step's tool list relates to the previous step's.
type Policy int

const (
	// PolicyStable keeps the prompt cache warm: the tools offered at the
	// previous step keep their place and their bytes (same tier, same
	// rendering); tools newly relevant to this step are appended: found by
	// search_tools, and, when the prompt changes anyway (appending re-bills
	// the messages), retrieved ones in the budget's room. A kept tool is
	// evicted only when its definition changed or left the catalog, when
	// the list is over the budget, or when keeping it for the steps to
	// come costs more than re-billing the prompt after it once (see
	// Thinker.Think). The list never exceeds Options.Budget plus the tools
	// the model asked for with search_tools. It is the default: with the
	// default budget packing it cost less than PolicyFresh on every trace
	// measured, per catalog 64–66% less with Claude's prices and 15–27%
	// less with gpt-4o-mini's (before packing: 57–64% less with Claude's, and at
	// most 1.1% more on one trace with gpt-4o-mini's; docs/measurements.md,
	// "Prompt cache").
	PolicyStable Policy = iota
	// PolicyFresh chooses every step's list afresh: the fewest tokens per
	// step, but every change re-bills the whole prompt after it.
	PolicyFresh
)

// String returns "stable" or "fresh".
func (p Policy) String() string {
	switch p {
	case PolicyStable:
		return "stable"
	case PolicyFresh:
		return "fresh"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// ParsePolicy reads "stable" or "fresh".
func ParsePolicy(s string) (Policy, bool) {
	switch s {
	case "stable":
		return PolicyStable, true
	case "fresh":
		return PolicyFresh, true
	}
	return 0, false
}

// Why a tool of the previous step was evicted.
const (
	EvictRemoved = "removed" // no longer in the catalog
	EvictChanged = "changed" // its definition changed, or a listed tool the model asked for comes whole: its bytes must change
	EvictCost    = "cost"    // keeping it costs more than re-billing the prompt after it
	EvictBudget  = "budget"  // the kept tools alone exceed the budget
)

// Eviction is a tool of the previous step's list that this step dropped.
type Eviction struct {
	Name string `json:"name"`
	// Tokens is what it cost in the previous request.
	Tokens int `json:"tokens"`
	// Reason is one of the Evict constants.
	Reason string `json:"reason"`
}

// keepStable turns a fresh offer (off, chosen for this step alone) into
// the stable one: req.Previous in its order and bytes, minus evictions,
// plus the fresh offer's newcomers.
//
// The eviction rule comes from the price model. Keeping k tokens of stale
// tools (offered before, not chosen for this step) costs k × cached-input
// price at each step to come; the run is expected to last as many more
// steps as it has taken (req.Steps, at least one). Evicting them changes
// the prompt from the first evicted tool on, so the tools after it and
// the messages (req.MessageTokens) are billed once more at the write
// price instead of the cached price. Each stale tool is a possible break
// point: the one that saves the most, if any saves, evicts every stale
// tool from it on. Once the prompt breaks anyway (a tool changed or left
// the catalog), every stale tool after the break goes for free.
func (t *Thinker) keepStable(req Request, off *Offer) {
	fresh := map[string]Offered{}
	for _, o := range off.Tools {
		fresh[o.Tool.Name] = o
	}
	list, brk, evicted := t.previous(req, off, fresh)
	list = t.evictFrom(list, t.costBreak(req, list, brk), EvictCost, &evicted)
	list, used := t.fitKept(list, &evicted)
	found, add := t.newcomers(off, list, used, len(evicted) > 0)
	list = append(list, found...)
	list = append(list, add...)

	off.Tools = list
	off.Tokens = 0
	for _, o := range list {
		off.Tokens += o.Tokens
	}
	off.Evicted = evicted
	off.Everything = off.Everything && len(evicted) == 0 && len(list) == len(fresh)
}

// previous is req.Previous, each tool as it was sent with this step's
// reason (kept when this step did not choose it), without the tools that
// changed or left the catalog (evicted). brk is the index in the list
// where the prompt breaks anyway: the first such eviction, else its end.
func (t *Thinker) previous(req Request, off *Offer, fresh map[string]Offered) (list []Offered, brk int, evicted []Eviction) {
	ranked := map[string]float64{}
	sticky := map[string]bool{}
	for _, m := range off.Ranked {
		ranked[m.Tool.Name] = m.Score
		if m.Sticky || m.Pinned {
			sticky[m.Tool.Name] = true
		}
	}
	list = make([]Offered, 0, len(req.Previous)+len(off.Tools))
	brk = -1
	for _, p := range req.Previous {
		if p.Reason == ReasonMeta {
			list = append(list, p)
			continue
		}
		cur, ok := t.ix.Get(p.Tool.Name)
		f := fresh[p.Tool.Name]
		// A listed tool the model asked for now comes with its schema:
		// its bytes change.
		relisted := p.Tier == budget.TierName && f.Reason == ReasonFound && f.Tier != budget.TierName
		if !ok || hashOf(cur) != hashOf(p.Tool) || relisted {
			why := EvictRemoved
			if ok {
				why = EvictChanged
			}
			evicted = append(evicted, Eviction{Name: p.Tool.Name, Tokens: p.Tokens, Reason: why})
			if brk < 0 {
				brk = len(list)
			}
			continue
		}
		e := p
		e.Score = ranked[p.Tool.Name]
		switch f, chosen := fresh[p.Tool.Name]; {
		case p.Reason == ReasonFound:
			// the model asked for it: it stays found (outside the budget)
		case chosen:
			e.Reason = f.Reason
		case sticky[p.Tool.Name]:
			e.Reason = ReasonSticky
		default:
			e.Reason = ReasonKept
		}
		list = append(list, e)
	}
	if brk < 0 {
		brk = len(list)
	}
	return list, brk, evicted
}

// costBreak is where the voluntary eviction of stale tools starts, by the
// price model (see keepStable): the stale tool before brk whose eviction,
// with every stale tool after it, saves the most; brk when none saves.
func (t *Thinker) costBreak(req Request, list []Offered, brk int) int {
	prices := t.opts.Prices
	if prices.Zero() {
		prices = budget.DefaultPrices
	}
	horizon := float64(max(req.Steps, 1))
	gain := func(from int) float64 { // evict the stale tools at from.. (from < brk)
		var stale, rebilled int
		for i := from; i < len(list); i++ {
			switch {
			case list[i].Reason == ReasonKept:
				stale += list[i].Tokens
			case i < brk:
				rebilled += list[i].Tokens
			}
		}
		if brk == len(list) {
			rebilled += req.MessageTokens
		}
		return float64(stale)*prices.CachedInput*horizon - float64(rebilled)*(prices.Write()-prices.CachedInput)
	}
	from, best := brk, 0.0
	for i := 0; i < brk; i++ {
		if list[i].Reason == ReasonKept {
			if g := gain(i); g > best {
				from, best = i, g
			}
		}
	}
	return from
}

// fitKept evicts kept tools, the worst first, until those that count
// (found ones aside) fit the budget; it returns the list and their tokens.
func (t *Thinker) fitKept(list []Offered, evicted *[]Eviction) ([]Offered, int) {
	used := 0
	for _, o := range list {
		if o.Reason != ReasonFound {
			used += o.Tokens
		}
	}
	for used > t.opts.Budget {
		i := worstStale(list)
		if i < 0 {
			break
		}
		*evicted = append(*evicted, Eviction{Name: list[i].Tool.Name, Tokens: list[i].Tokens, Reason: EvictBudget})
		used -= list[i].Tokens
		list = slices.Delete(list, i, i+1)
	}
	return list, used
}

// newcomers are the fresh offer's tools that list lacks: the found ones
// (and the oversized one) beyond the budget, then the others in the room
// list leaves (used tokens of it), search_tools last. Appending a tool
// re-bills the messages after the tools: retrieved newcomers join only
// when the prompt changes anyway (an eviction, a found, sticky or pinned
// tool, search_tools), otherwise the model finds them with search_tools;
// without search_tools, retrieval is the only way in and they always may.
func (t *Thinker) newcomers(off *Offer, list []Offered, used int, evicted bool) (found, add []Offered) {
	in := map[string]bool{}
	count := 0
	for _, o := range list {
		in[o.Tool.Name] = true
		if o.Reason != ReasonMeta && o.Reason != ReasonFound {
			count++
		}
	}
	var cands []budget.Candidate
	reason := map[string]string{}
	breaks := evicted || !slices.ContainsFunc(off.Tools, func(o Offered) bool { return o.Reason == ReasonMeta })
	for _, o := range off.Tools {
		switch {
		case in[o.Tool.Name]:
		case o.Reason == ReasonFound || o.Tool.Name == off.Oversized:
			found = append(found, o)
			breaks = true
		case o.Reason == ReasonMeta:
			// search_tools joins last, in the room it always had
			add = append(add, o)
			used += o.Tokens
			breaks = true
		default:
			reason[o.Tool.Name] = o.Reason
			must := o.Reason == ReasonSticky || o.Reason == ReasonPinned
			breaks = breaks || must
			cands = append(cands, budget.Candidate{Tool: o.Tool, Score: o.Score, Pinned: must})
		}
	}
	if room := t.opts.Budget - used; breaks && len(cands) > 0 && room > 0 && count < t.opts.MaxTools {
		b := budget.Budget{Tokens: room, MaxTools: t.opts.MaxTools - count, Listing: t.listing(room, off.HasSearchTool())}
		sel, err := budget.Select(t.tok, cands, b)
		if err != nil { // the must-haves do not fit: they compete
			for i := range cands {
				cands[i].Pinned = false
			}
			sel, err = budget.Select(t.tok, cands, b)
		}
		if err == nil {
			fitted, _ := requestOrder(sel, reason)
			add = append(fitted, add...)
		}
	}
	return found, add
}

// evictFrom drops the stale tools of list from index from on.
func (t *Thinker) evictFrom(list []Offered, from int, why string, evicted *[]Eviction) []Offered {
	out := list[:from]
	for _, o := range list[from:] {
		if o.Reason == ReasonKept {
			*evicted = append(*evicted, Eviction{Name: o.Tool.Name, Tokens: o.Tokens, Reason: why})
			continue
		}
		out = append(out, o)
	}
	return out
}

// worstStale returns the index of the tool to evict first when the kept
// tools exceed the budget: the lowest-scored stale tool, else the
// lowest-scored tool that is neither search_tools nor found; -1 if none.
func worstStale(list []Offered) int {
	best := -1
	for _, staleOnly := range []bool{true, false} {
		for i, o := range list {
			if o.Reason == ReasonMeta || o.Reason == ReasonFound || (staleOnly && o.Reason != ReasonKept) {
				continue
			}
			if best < 0 || o.Score < list[best].Score {
				best = i
			}
		}
		if best >= 0 {
			return best
		}
	}
	return -1
}

// hashOf is a tool's content hash, computed when the tool lacks one.
func hashOf(tl tool.Tool) string {
	if tl.Hash != "" {
		return tl.Hash
	}
	return tool.ContentHash(tl)
}
