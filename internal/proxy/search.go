package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// searchArgs are search_tools' arguments.
type searchArgs struct {
	Query string `json:"query"`
	K     int    `json:"k,omitempty"`
}

// FoundTool is one tool of a search_tools answer.
type FoundTool struct {
	Name   string `json:"name"`
	Server string `json:"server,omitempty"`
	// Score is the retrieval score in [0, 1], best 1.
	Score       float64 `json:"score"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	// InputSchema is the tool's input schema as fitted to the budget; Tier
	// says how much of its documentation it kept ("full", "no-param-docs",
	// "short-description" or "minimal"). The listed tool has it in full.
	InputSchema json.RawMessage `json:"inputSchema"`
	Tier        string          `json:"tier"`
}

// SearchAnswer is search_tools' answer: its text content is this as JSON,
// and so is its structuredContent.
type SearchAnswer struct {
	// Tools are the tools found, best first.
	Tools []FoundTool `json:"tools"`
	// Omitted names tools ranked high enough but left out to keep the
	// answer within the budget, best first: call_tool calls them too.
	Omitted []string `json:"omitted,omitempty"`
	// Tokens is what the tools' definitions cost, as the budget counts it.
	Tokens int `json:"tokens"`
	// Listed is set when every tool found is on the caller's tool list
	// (not so when the list has no room, or is static).
	Listed bool `json:"listed"`
}

// search answers search_tools.
func (s *session) search(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	start := time.Now()
	p := s.p
	log := p.logger(req.Session)
	var a searchArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil {
		return errorResult("search_tools: arguments: %v", err), nil
	}
	a.Query = strings.TrimSpace(a.Query)
	switch {
	case a.Query == "":
		return errorResult("search_tools: query is empty: say what the tool should do"), nil
	case a.K < 0 || a.K > MaxK:
		return errorResult("search_tools: k = %d, want 1..%d", a.K, MaxK), nil
	case a.K == 0:
		a.K = DefaultK
	}
	ans, tools, err := p.Search(ctx, a.Query, a.K)
	if err != nil {
		log.Warn("search", "query", a.Query, "k", a.K, "error", err, "duration", time.Since(start))
		if errors.Is(err, retrieval.ErrSearch) {
			return errorResult("search_tools: %v", err), nil
		}
		return nil, err
	}
	added, evicted := s.list(tools)
	ans.Listed = len(tools) > 0 && s.listed(tools)
	b, err := json.Marshal(ans)
	if err != nil {
		return nil, fmt.Errorf("search_tools: encode answer: %w", err)
	}
	found := make([]string, len(ans.Tools))
	for i, t := range ans.Tools {
		found[i] = fmt.Sprintf("%s=%.3f", t.Name, t.Score)
	}
	log.Info("search", "query", a.Query, "k", a.K, "tools", found, "omitted", len(ans.Omitted),
		"tokens", ans.Tokens, "added", len(added), "evicted", len(evicted), "duration", time.Since(start))
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// Search ranks the catalog for query and fits the best k tools into the
// budget (budget.Select: tools are compressed before they are left out). It
// returns the answer and the found tools, best first.
func (p *Proxy) Search(ctx context.Context, query string, k int) (SearchAnswer, []tool.Tool, error) {
	ans := SearchAnswer{Tools: []FoundTool{}}
	// Quarantined tools (quarantine.go) are not offered: ask for as many
	// more, so that k others can be.
	q := p.quarantine()
	matches, err := p.ts.Search(ctx, query, k+len(q))
	if err != nil {
		return ans, nil, err
	}
	matches = slices.DeleteFunc(matches, func(m retrieval.Match) bool { return q.has(m.Tool.Name) })
	matches = matches[:min(k, len(matches))]
	if len(matches) == 0 {
		return ans, nil, nil
	}
	tok := p.ts.Thinker().Options().Tokenizer
	cands := make([]budget.Candidate, len(matches))
	score := make(map[string]float64, len(matches))
	for i, m := range matches {
		cands[i] = budget.Candidate{Tool: m.Tool, Score: m.Score}
		score[m.Tool.Name] = m.Score
	}
	sel, err := budget.Select(tok, cands, budget.Budget{Tokens: p.opts.Budget, MaxTools: k})
	if errors.Is(err, budget.ErrBudgetTooSmall) || (err == nil && len(sel.Tools) == 0) {
		// Not even the best tool fits at its cheapest tier: send it anyway,
		// as the Think step does with a tool that is clearly wanted.
		cands[0].Pinned = true
		sel, err = budget.Select(tok, cands[:1], budget.Budget{Tokens: math.MaxInt32, MaxTools: 1})
		for _, m := range matches[1:] {
			sel.Dropped = append(sel.Dropped, m.Tool.Name)
		}
	}
	if err != nil {
		return ans, nil, fmt.Errorf("search_tools: fit %d tools into %d tokens: %w", len(cands), p.opts.Budget, err)
	}
	picked := slices.Clone(sel.Tools)
	slices.SortStableFunc(picked, func(a, b budget.Selected) int {
		if c := cmp.Compare(score[b.Tool.Name], score[a.Tool.Name]); c != 0 {
			return c
		}
		return cmp.Compare(a.Tool.Name, b.Tool.Name)
	})
	tools := make([]tool.Tool, len(picked))
	for i, s := range picked {
		tools[i] = s.Tool
		ans.Tools = append(ans.Tools, FoundTool{
			Name:        s.Tool.Name,
			Server:      s.Tool.Server,
			Score:       math.Round(score[s.Tool.Name]*1000) / 1000,
			Title:       text(s.Tool.Title),
			Description: text(s.Description),
			InputSchema: schemaText(s.Parameters),
			Tier:        s.Tier.String(),
		})
		ans.Tokens += s.Tokens
	}
	ans.Omitted = append(ans.Omitted, sel.Dropped...)
	return ans, tools, nil
}

// errorResult is a tool result that tells the model what went wrong.
func errorResult(format string, a ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, a...)}},
		IsError: true,
	}
}

// orEmpty is raw, or an empty object when raw is empty or null.
func orEmpty(raw json.RawMessage) json.RawMessage {
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}
