package agent

import (
	"encoding/json"
	"slices"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// PromptCache is how much of one request repeats the previous request's
// prefix, as the agent serialises it: the tools in request order, then
// the messages. Providers cache a byte-identical prefix, so the repeated
// part (cacheable) is billed at the cached-input price and the rest at
// the full (or cache-write) price. Tokens are counted with the agent's
// tokenizer: a tool as budget.Tokenizer.CountTool counts it, a message as
// its content and tool calls plus 4 tokens, so the sum is close to, not
// equal to, the provider's prompt_tokens; the provider's own count of
// cached tokens is Usage.CachedPromptTokens.
type PromptCache struct {
	// PromptTokens is the request's tools and messages; CacheableTokens
	// the part of them that repeats the previous request's prefix;
	// UncachedTokens the rest.
	PromptTokens    int `json:"prompt_tokens"`
	CacheableTokens int `json:"cacheable_prompt_tokens"`
	UncachedTokens  int `json:"uncached_prompt_tokens"`
	// ToolsChanged is set when the tool list differs from the previous
	// request's (any tool added, dropped, moved or re-rendered): the
	// prompt is then re-billed from that tool on, messages included.
	ToolsChanged bool `json:"tools_changed"`
	// Evicted are the previous request's tools this step dropped, and
	// why (think.PolicyStable).
	Evicted []think.Eviction `json:"evicted,omitempty"`
}

// segment is one tool or message of a request: its bytes as sent and its
// tokens.
type segment struct {
	key    string
	tokens int
}

// prompt is a request as a sequence of segments.
type prompt struct {
	tools, msgs []segment
}

func (p prompt) tokens() (tools, msgs int) {
	for _, s := range p.tools {
		tools += s.tokens
	}
	for _, s := range p.msgs {
		msgs += s.tokens
	}
	return tools, msgs
}

// measure returns the prompt of a request with defs (costing offered's
// tokens) and msgs, and how much of it repeats prev.
func (r *run) measure(prev *prompt, offered []OfferedTool, defs []ToolDef, msgs []tool.Message) (prompt, PromptCache) {
	var p prompt
	for i, d := range defs {
		b, _ := json.Marshal(d)
		p.tools = append(p.tools, segment{key: string(b), tokens: offered[i].Tokens})
	}
	// Messages are only ever appended: the counts of earlier ones are
	// reused.
	if prev != nil && len(prev.msgs) <= len(msgs) {
		p.msgs = slices.Clone(prev.msgs)
		for i := range p.msgs {
			if b, _ := json.Marshal(msgs[i]); string(b) != p.msgs[i].key {
				p.msgs = p.msgs[:i]
				break
			}
		}
	}
	for _, m := range msgs[len(p.msgs):] {
		b, _ := json.Marshal(m)
		p.msgs = append(p.msgs, segment{key: string(b), tokens: r.messageTokens(m)})
	}
	var pc PromptCache
	t, m := p.tokens()
	pc.PromptTokens = t + m
	if prev == nil {
		pc.UncachedTokens = pc.PromptTokens
		return p, pc
	}
	pc.ToolsChanged = !slices.Equal(p.tools, prev.tools)
	all := append(slices.Clone(p.tools), p.msgs...)
	was := append(slices.Clone(prev.tools), prev.msgs...)
	for i := 0; i < len(all) && i < len(was) && all[i].key == was[i].key; i++ {
		pc.CacheableTokens += all[i].tokens
	}
	pc.UncachedTokens = pc.PromptTokens - pc.CacheableTokens
	return p, pc
}

// messageTokens counts a message as PromptCache says.
func (r *run) messageTokens(m tool.Message) int {
	n := 4 + r.a.tok.Count(m.Content)
	for _, c := range m.ToolCalls {
		n += r.a.tok.Count(c.Name) + r.a.tok.Count(c.Arguments)
	}
	return n
}

// stepCost returns the step's estimated cost (the cacheable prompt at the
// cached price, the rest at the write price) and, when the provider
// reported usage, its cost from the provider's counts.
func (r *run) stepCost(st *Step) (estimated, reported float64) {
	p := r.a.prices
	out := st.Usage.CompletionTokens
	if out == 0 {
		out = r.messageTokens(st.Message)
	}
	estimated = p.Cost(0, st.PromptCache.CacheableTokens, st.PromptCache.UncachedTokens, out)
	if u := st.Usage; u.PromptTokens > 0 {
		reported = p.Cost(max(u.PromptTokens-u.CachedPromptTokens-u.CacheWriteTokens, 0), u.CachedPromptTokens, u.CacheWriteTokens, u.CompletionTokens)
	}
	return estimated, reported
}

// resolvePrices is Options.Prices, or budget.DefaultPrices when zero.
func resolvePrices(p budget.Prices) budget.Prices {
	if p.Zero() {
		return budget.DefaultPrices
	}
	return p
}
