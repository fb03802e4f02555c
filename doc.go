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
//	model, err := openaimodel.NewChat("gpt-4o-mini", nil) // package agent/openaimodel
//	if err != nil {
//		log.Fatal(err)
//	}
//	a, err := agent.New(model, ts, nil)
//	if err != nil {
//		log.Fatal(err)
//	}
//	res, err := a.Run(ctx, "Use the get-sum tool to add 17 and 25.")
//
// # Your own loop: Select
//
// An application that runs its own loop (LangChainGo, Eino, Genkit, a
// hand-written one) calls Select before each model call: its conversation
// in, as plain Messages; the tools for this call out, each with the reason
// it is offered, as the "tools" array of its API (Selection.JSON with
// budget.FormatChat, FormatResponses, FormatAnthropic or FormatMCP):
//
//	sel, err := ts.Select(ctx, []tool.Message{{Role: "user", Content: task}})
//	body := sel.JSON(budget.FormatAnthropic) // send as "tools"
//
// When the model calls search_tools, answer it with SearchTools; the next
// Select offers what it found, and tools called stay offered.
//
// # What is cached
//
// The Toolset owns one store (Options.Store, a store.Store: by default
// the folder os.UserCacheDir()/toolsift, or the Hub's own with OpenHub;
// store.NewMemory() keeps nothing past the process) and hands it to the
// Hub it makes. It keeps each server's tool
// list there (catalog/, see package upstream) and its tools' trust records
// (trust/), the vector of every tool document and every server document
// (retrieval's server-aware ranking) per embedder (vectors/) and the
// full-tier token cost of every tool per tokenizer (tokens/), all keyed by
// content hashes, and its usage memory (usage/, one value per scope:
// Options.Usage). In the folder these keys are files, the ones toolsift
// has always written; a shared store (PostgreSQL) lets the replicas of a
// gateway share them. A second Open of the same config starts no server that
// has a cache entry, embeds one document per index (to learn the
// embedder's dimension) and counts no tokens: on the 73
// servers and 2,670 tools of the real catalog the first model request goes
// out 1.1–1.3 s after toolbench starts, Open itself taking about 0.5 s
// once the process has loaded its tables (benchmarks/lazystart.sh; the
// README has the runs). The cache holds
// tool metadata, vectors and counts, never an env or header value, a URL,
// nor a query's text (the usage memory keeps a request as its vector and
// hashed words, unless usage.Options.KeepText).
//
// # What is learned
//
// A Toolset remembers which tools requests led to (Options.Usage, on
// unless NoUsage): the agent tells it of each successful call of a tool a
// step offered when its run ends, a loop over Select tells it with
// Record, and every ranking (Think, Select, Search, SearchTools, Find,
// Explain) then lifts the tools that requests like the new one led to, in
// the scope of the caller of its ctx (usage.WithCaller; one scope
// without). Kept in the store, written within a second of a call and at
// Close, read at Open and, over a store.Watcher, whenever another process
// writes it.
//
// # Opening in the background
//
// Open returns when every server has its tools in the index, which on a
// first start means every server has started and listed them: tens of
// seconds for a catalog of Node servers. Over a Hub made with
// upstream.HubOptions.Background, OpenHub returns as soon as the servers
// whose tools are in the cache are indexed; the others go on connecting
// (Status shows them connecting), each joins the index when it has listed
// its tools, and Options.OnChange hears it; one that fails is the Hub's to
// report (Status, HubOptions.Progress and Logger). Think, Select,
// Explain, Find and SearchTools meanwhile first wait for the servers
// still connecting, up to Options.ConnectWait (5s), returning as soon as
// they have listed or failed, then answer with what is indexed and name
// what is missing: the servers still connecting and those that failed
// (think.Incomplete in the Offer, the Selection and the search answers;
// Unlisted says the same without a step). A Call of a tool whose server
// is still connecting waits for that server. Servers listed from the
// cache are never waited for: a warm start waits for nothing. Search
// does not wait. Pins are resolved at
// OpenHub against what is indexed, and again as servers join (Pinned grows). A proxy
// opens this way, so that it answers its clients at once; a program that
// wants the whole catalog before its first step (an agent) keeps the
// default.
//
// # One wiring
//
// New builds a Toolset over a list of tools, with no servers behind them;
// OpenHub builds the same Toolset and then feeds its index from a Hub
// (Open and OpenConfig make that Hub). toolbench eval and the benchmarks
// measure catalogs through New and a Think step of their own built as a
// Toolset builds its own (DefaultEmbedders, think.New), so the embedders,
// tokenizer and Think options they measure are the ones Open gives an
// agent. Options holds the everyday knobs (Budget, K, Pin, Encoding, the
// embedders, Store, Logger); the rest is set on the parts, built by the
// caller and handed over: a Hub (OpenHub) and a Think step
// (Options.Thinker). Search is the typed search (any k from 1);
// SearchTools is its JSON form for the model's search_tools calls.
//
// The packages below it can be used on their own: upstream (many servers, one
// Hub), toolindex (the index), retrieval (ranking), budget (token counts and
// selection), think (the Think step that joins them), agent (the ReAct
// loop, with its models in agent/openaimodel and agent/anthropicmodel). docs/ARCHITECTURE.md describes how they fit.
package toolsift
