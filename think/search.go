package think

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// FoundTool is one tool of a SearchAnswer.
type FoundTool struct {
	Name   string `json:"name"`
	Server string `json:"server,omitempty"`
	// Score is the retrieval score in [0, 1], best 1.
	Score       float64 `json:"score"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	// InputSchema is the tool's input schema as fitted to the budget; Tier
	// says how much of its documentation it kept ("full", "no-param-docs",
	// "short-description" or "minimal").
	InputSchema json.RawMessage `json:"inputSchema"`
	Tier        string          `json:"tier"`
}

// SearchAnswer is the answer of a search_tools call that brings the found
// tools' schemas, fitted to a budget (toolsift serve's: its client has no
// Think step to offer them at the next one). As JSON it is what the model
// reads.
type SearchAnswer struct {
	// Tools are the tools found, best first.
	Tools []FoundTool `json:"tools"`
	// Omitted names tools ranked high enough but left out to keep the
	// answer within the budget, best first.
	Omitted []string `json:"omitted,omitempty"`
	// Tokens is what the tools' definitions cost, as the budget counts it.
	Tokens int `json:"tokens"`
	// Listed is for a caller that also lists the found tools (toolsift
	// serve sets it when every tool found joined the caller's tool list);
	// Find leaves it false.
	Listed bool `json:"listed"`
	// Incomplete, when not nil, names the servers whose tools the search
	// could not see: still connecting (a search again soon sees more), or
	// failed. Find leaves it nil; a Toolset over a Hub sets it (see
	// Incomplete).
	Incomplete *Incomplete `json:"incomplete,omitempty"`
}

// Find answers a search_tools call with the found tools' schemas: it ranks
// the catalog for query (retrieval.Retriever.Search, the best k) and fits
// them into tokens, 0 meaning Options.Budget (budget.Select, counted by
// Options.Tokenizer: tools are
// compressed before they are left out, and those left out are named in
// Omitted). A tool found by a search is clearly wanted (the rule of Think,
// clearlyWanted): when not even the best one fits at its cheapest tier, it
// is sent anyway, alone and beyond the budget. Tools skip names (nil:
// none; toolsift serve's quarantined tools and those out of a caller's
// scope) are not ranked at all (retrieval.Retriever.SearchWithin): k
// others are found in their place, and no score, name or count of the
// answer comes from them. skip need not be safe for concurrent use; it is
// asked while the index is read-locked and must not call it. It returns the answer and the found
// tools, best first; a bad query or k is an error wrapping
// retrieval.ErrSearch.
func (t *Thinker) Find(ctx context.Context, query string, k, tokens int, skip func(name string) bool) (SearchAnswer, []tool.Tool, error) {
	ans := SearchAnswer{Tools: []FoundTool{}}
	if tokens <= 0 {
		tokens = t.opts.Budget
	}
	matches, err := t.search(ctx, query, k, skip)
	if err != nil || len(matches) == 0 {
		return ans, nil, err
	}
	cands := make([]budget.Candidate, len(matches))
	score := make(map[string]float64, len(matches))
	for i, m := range matches {
		cands[i] = budget.Candidate{Tool: m.Tool, Score: m.Score}
		score[m.Tool.Name] = m.Score
	}
	sel, err := budget.Select(t.tok, cands, budget.Budget{Tokens: tokens, MaxTools: k})
	nothingFits := errors.Is(err, budget.ErrBudgetTooSmall) || (err == nil && len(sel.Tools) == 0)
	if nothingFits && t.clearlyWanted(matches[0].Tool.Name, ReasonFound, matches) {
		cands[0].Pinned = true
		sel, err = budget.Select(t.tok, cands[:1], budget.Budget{Tokens: math.MaxInt32, MaxTools: 1})
		for _, m := range matches[1:] {
			sel.Dropped = append(sel.Dropped, m.Tool.Name)
		}
	}
	if err != nil {
		return ans, nil, fmt.Errorf("search_tools: fit %d tools into %d tokens: %w", len(cands), tokens, err)
	}
	picked := slices.Clone(sel.Tools)
	slices.SortStableFunc(picked, func(a, b budget.Selected) int {
		if c := cmp.Compare(score[b.Tool.Name], score[a.Tool.Name]); c != 0 {
			return c
		}
		return cmp.Compare(a.Tool.Name, b.Tool.Name)
	})
	found := make([]tool.Tool, len(picked))
	for i, s := range picked {
		found[i] = s.Tool
		ans.Tools = append(ans.Tools, FoundTool{
			Name:        s.Tool.Name,
			Server:      s.Tool.Server,
			Score:       math.Round(score[s.Tool.Name]*1000) / 1000,
			Title:       s.Tool.Title,
			Description: s.Description,
			InputSchema: s.Parameters,
			Tier:        s.Tier.String(),
		})
		ans.Tokens += s.Tokens
	}
	ans.Omitted = append(ans.Omitted, sel.Dropped...)
	return ans, found, nil
}

// search is the best k matches for query among the tools skip (nil:
// none) lets through, search_tools aside (it never finds itself, should
// the index hold a tool of its name): the others are not ranked at all
// (retrieval.Retriever.SearchWithin), so they neither take a place nor
// move the others' scores.
func (t *Thinker) search(ctx context.Context, query string, k int, skip func(string) bool) ([]retrieval.Match, error) {
	_, meta := t.ix.Get(SearchToolName)
	if skip == nil && !meta {
		return t.r.Search(ctx, query, k)
	}
	return t.r.SearchWithin(ctx, query, k, func(tl tool.Tool) bool { return tl.Name != SearchToolName && (skip == nil || !skip(tl.Name)) })
}
