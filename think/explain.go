package think

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
)

// What became of a tool at a step (ToolExplanation.Decision).
const (
	DecisionOffered       = "offered"         // in the request (see Reason)
	DecisionNotInCatalog  = "not_in_catalog"  // no tool of that name
	DecisionNotRanked     = "not_ranked"      // not among the Depth best of the fused ranking (retrieval.Options.Depth)
	DecisionBelowK        = "below_k"         // ranked, but after the K best (retrieval.Options.K)
	DecisionBelowMinScore = "below_min_score" // within K, but under retrieval.Options.MinScore
	DecisionCutByBudget   = "cut_by_budget"   // a candidate that budget.Select left out
	DecisionOversized     = "oversized"       // larger than the whole budget at its cheapest tier
)

// Explanation is one step laid open: what Think offered, how the
// retriever ranked the catalog, and for each tool asked about what became
// of it and why. Thinker.Explain returns it.
type Explanation struct {
	// Offer is the step's outcome, as Think returns it.
	Offer Offer
	// Retrieval is the ranking behind Offer.Ranked: the fused ranking and
	// each signal's.
	Retrieval retrieval.Explanation
	// Budget is the tool budget in tokens (Options.Budget); Left is what
	// the offered tools left of it (negative when an oversized tool was
	// offered beyond it).
	Budget, Left int
	// Tools explain the tools asked about, or, when none was, the tools
	// the step considered: those offered and those ranked, in fused rank
	// order.
	Tools []ToolExplanation
}

// ToolExplanation is what became of one tool at a step, and why.
type ToolExplanation struct {
	// ToolRank is its fused and per-signal rank and score.
	retrieval.ToolRank
	// Server is the tool's server (empty for local tools and unknown
	// names).
	Server string
	// Decision is one of the Decision constants.
	Decision string
	// Reason, Tier and Tokens say why and how an offered tool is offered
	// (Reason is one of the Reason constants).
	Reason string
	Tier   budget.Tier
	Tokens int
	// FullTokens and CheapestTokens are its cost at full tier and at its
	// cheapest tier (0 for a name not in the catalog).
	FullTokens, CheapestTokens int
	// ShortBy, for a tool cut by the budget, is how many more tokens the
	// step would have needed to add it at its cheapest tier (0 when it
	// would have fit, but the tools kept were worth more per token, or
	// MaxTools was reached).
	ShortBy int
	// Close names tools of the catalog whose name or purpose is closest
	// to a name it lacks.
	Close []string
}

// closeMatches is how many close names a name not in the catalog gets.
const closeMatches = 3

// Explain runs the Think step for req and says, for each tool named (or,
// with none, for each tool the step considered), what became of it and
// why: offered (at which tier, for which reason), or not in the catalog
// (with the closest names), not reached by any signal, ranked below K,
// under MinScore, larger than the whole budget, or cut by the budget (and
// by how many tokens). It ranks as Think does, then once more per signal.
func (t *Thinker) Explain(ctx context.Context, req Request, names ...string) (Explanation, error) {
	off, err := t.Think(ctx, req)
	if err != nil {
		return Explanation{}, err
	}
	rex, err := t.r.Explain(ctx, req.Query)
	if err != nil {
		return Explanation{}, fmt.Errorf("explain ranking: %w", err)
	}
	if t.compete > 0 {
		// The retriever returns as deep as its Depth, for the tools that
		// fill the budget's rest; the step's K is what competes.
		rex.K = t.compete
	}
	ex := Explanation{Offer: off, Retrieval: rex, Budget: t.opts.Budget, Left: t.opts.Budget - off.Tokens}
	if len(names) == 0 {
		seen := map[string]bool{}
		for _, m := range off.Ranked {
			if !seen[m.Tool.Name] {
				seen[m.Tool.Name] = true
				names = append(names, m.Tool.Name)
			}
		}
		for _, o := range off.Tools {
			if o.Reason != ReasonMeta && !seen[o.Tool.Name] {
				seen[o.Tool.Name] = true
				names = append(names, o.Tool.Name)
			}
		}
	}
	for _, name := range names {
		te, err := t.explainTool(ctx, ex, name)
		if err != nil {
			return ex, err
		}
		ex.Tools = append(ex.Tools, te)
	}
	if len(names) > 1 {
		rank := func(r int) int {
			if r == 0 {
				return int(^uint(0) >> 1)
			}
			return r
		}
		slices.SortStableFunc(ex.Tools, func(a, b ToolExplanation) int { return rank(a.Rank) - rank(b.Rank) })
	}
	return ex, nil
}

// explainTool says what became of the tool named name at the step ex.
func (t *Thinker) explainTool(ctx context.Context, ex Explanation, name string) (ToolExplanation, error) {
	te := ToolExplanation{ToolRank: ex.Retrieval.Tool(name)}
	tl, ok := t.ix.Get(name)
	if !ok {
		te.Decision = DecisionNotInCatalog
		close, err := t.closeNames(ctx, name)
		te.Close = close
		return te, err
	}
	te.Server = tl.Server
	full, err := t.tok.CountTool(tl, budget.TierFull)
	if err == nil {
		te.FullTokens = full.Tokens
	}
	if cheap, err := t.cheapest(tl); err == nil {
		te.CheapestTokens = cheap
	}
	if i := slices.IndexFunc(ex.Offer.Tools, func(o Offered) bool { return o.Tool.Name == name && o.Reason != ReasonMeta }); i >= 0 {
		o := ex.Offer.Tools[i]
		te.Decision, te.Reason, te.Tier, te.Tokens = DecisionOffered, o.Reason, o.Rendered.Tier, o.Rendered.Tokens
		return te, nil
	}
	considered := slices.ContainsFunc(ex.Offer.Ranked, func(m retrieval.Match) bool { return m.Tool.Name == name })
	switch {
	case considered && te.CheapestTokens > t.opts.Budget:
		te.Decision = DecisionOversized
	case considered:
		te.Decision = DecisionCutByBudget
		te.ShortBy = max(te.CheapestTokens-ex.Left, 0)
	case te.Rank == 0:
		te.Decision = DecisionNotRanked
	case te.BelowMinScore:
		te.Decision = DecisionBelowMinScore
	default:
		te.Decision = DecisionBelowK
	}
	return te, nil
}

// closeNames returns the catalog's tools closest to a name it lacks: the
// tools whose name ends with it (a server's name without the
// server__ prefix), then the best matches of its words.
func (t *Thinker) closeNames(ctx context.Context, name string) ([]string, error) {
	var out []string
	want := strings.ToLower(strings.TrimSpace(name))
	for tl := range t.ix.All() {
		n := strings.ToLower(tl.Name)
		if len(out) < closeMatches && (strings.HasSuffix(n, "__"+want) || strings.ToLower(tl.OriginalName) == want) {
			out = append(out, tl.Name)
		}
	}
	words := strings.NewReplacer("__", " ", "_", " ", "-", " ", ".", " ").Replace(name)
	if strings.TrimSpace(words) == "" {
		return out, nil
	}
	matches, err := t.r.Search(ctx, words, closeMatches)
	if err != nil {
		return out, fmt.Errorf("close names of %q: %w", name, err)
	}
	for _, m := range matches {
		if len(out) < closeMatches && !slices.Contains(out, m.Tool.Name) {
			out = append(out, m.Tool.Name)
		}
	}
	return out, nil
}
