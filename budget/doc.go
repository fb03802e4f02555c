// Package budget knows what a prompt costs and makes the tool list fit.
//
// It owns four things:
//
//   - Tokenizer: exact token counts, the tokens tiktoken-go gives, from BPE
//     tables embedded in the binary (github.com/pkoukk/tiktoken-go-loader),
//     so counting never touches the network; its own merge takes
//     O(n log n) time in a piece's length, where tiktoken-go's is
//     quadratic (a megabyte of letters without a space: 1 s, not 40 min). NewTokenizer picks the encoding
//     from the model name (o200k_base for gpt-4o, gpt-4.1, gpt-5 and the
//     o-series; cl100k_base for gpt-4, gpt-3.5 and the embedding models;
//     o200k_base for models it does not know) or takes one explicitly.
//   - The cost of a tool as sent: Tokenizer.CountTool returns a tool at a
//     compression Tier (full, no parameter docs, short description,
//     minimal; and name, a listing: the name and one line, no parameters)
//     with the tokens of its Chat Completions JSON, cached by content
//     hash. See the Overhead constants for how that count relates to a
//     provider's prompt_tokens.
//   - Select: which candidate tools to send, and at which tier, to keep the
//     most relevance within a token budget, in a stable order; with
//     Budget.Listing, the tools the schemas leave out are listed by name
//     (for a model that can ask a search tool for their schemas).
//   - Truncate: tool results and history cut to a token limit at a clean
//     boundary, with a note saying how much was cut.
//
// Quick start:
//
//	tok, err := budget.NewTokenizer("gpt-4.1", "")
//	if err != nil { ... }
//	n := tok.Count("hello world") // 2
//
//	sel, err := budget.Select(tok, []budget.Candidate{
//		{Tool: search, Score: 0.9, Pinned: true},
//		{Tool: weather, Score: 0.7},
//		{Tool: stocks, Score: 0.2},
//	}, budget.Budget{Tokens: 2000, MaxTools: 20})
//	if err != nil { ... } // errors.Is(err, budget.ErrBudgetTooSmall)
//	for _, s := range sel.Tools {
//		// send s.Tool.Name, s.Description, s.Parameters (s.Tokens each)
//	}
//
//	observation = budget.Truncate(tok, observation, 1000)
package budget
