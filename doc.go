// Package toolsift keeps AI agents fast and accurate when they are connected
// to hundreds or thousands of tools: it connects to the MCP servers of a
// config file, indexes every tool, and at every step of an agent offers the
// model only the tools that matter for that step, fitted exactly into a
// token budget.
//
// Open is the one call from a config file to a ready Toolset; agent.New
// takes the Toolset as it is:
//
//	ts, err := toolsift.Open(ctx, "mcp.json", nil) // connect, index, ready
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer ts.Close()
//	model, err := agent.NewOpenAI("gpt-4o-mini", nil)
//	if err != nil {
//		log.Fatal(err)
//	}
//	a, err := agent.New(model, ts, nil)
//	if err != nil {
//		log.Fatal(err)
//	}
//	res, err := a.Run(ctx, "Use the get-sum tool to add 17 and 25.")
//
// # What is cached
//
// Open keeps, in the Hub's cache folder (os.UserCacheDir()/toolsift, or
// Options.Hub.CacheDir; nothing with Options.Hub.NoCache), each server's
// tool list (catalog/, see package mcp), the vector of every tool document
// per embedder (vectors/) and the full-tier token cost of every tool per
// tokenizer (tokens/), all keyed by content hashes. A second Open of the
// same config starts no server that has a cache entry, embeds one document
// (to learn the embedder's dimension) and counts no tokens: on the 73
// servers and 2,670 tools of the real catalog the first model request goes
// out about 0.5 s after start (benchmarks/lazystart.sh). The cache holds
// tool metadata, vectors and counts, never an env or header value, a URL,
// nor a query.
//
// The packages below it can be used on their own: mcp (many servers, one
// Hub), toolindex (the index), retrieval (ranking), budget (token counts and
// selection), think (the Think step that joins them), agent (the ReAct
// loop). docs/ARCHITECTURE.md describes how they fit.
package toolsift
