// Package retrieval chooses, for each step of an agent, the few tools that
// matter out of a [toolindex.Index] of thousands.
//
// A [Retriever] turns the agent's state ([Query]: the user's task, the model's
// latest thought or tool request, recent tool results, the tools already
// used) into searches of the index's signals — BM25F
// ([toolindex.Index.SearchLexical]), the [toolindex.Embedder]'s vectors
// ([toolindex.Index.SearchVector]) and, when the index has a Semantic
// embedder, the sentence encoder's vectors
// ([toolindex.Index.SearchSemantic]) — and fuses
// them into one ranking. Pinned tools are always returned, tools the agent
// already used stay (sticky), and a server filter restricts what is
// retrieved.
//
// Quick start:
//
//	emb, _ := toolindex.NewLocalEmbedder(nil) // offline, deterministic
//	ix, _ := toolindex.New(emb, nil)
//	ix.Upsert(ctx, tools...)
//	r, _ := retrieval.New(ix, &retrieval.Options{K: 8})
//	matches, _ := r.Retrieve(ctx, retrieval.Query{Task: userMessage, Thought: lastAssistantText})
//
// [Retriever.Search] ranks for one need (a Go caller's k tools, and the
// search_tools meta-tool's answers, which the think package owns), and
// [Retriever.SearchWithin] among the tools a filter lets through. The
// package only ranks (toolbench eval measures the ranking).
//
// # How a query is ranked
//
// Each text of the Query (thought, task, observations) is searched as a
// whole and, when it has several sentences, sentence by sentence: an
// agent's task often asks for several things ("find the flight, then book
// the hotel, then email the plan"), and the tool for each of them is best
// found by its own sentence. Every search asks every signal for [Options].Depth
// candidates. Fusion scores a tool in each list by how far
// it stands above the list's last candidate, in standard deviations of
// the list's scores, then sums, per tool and signal, the contribution of
// the whole text and the best contribution among its sentences, weighted
// by the signal ([DefaultWeights]: BM25F 1, semantic 0.75, vector 0.5) and
// by the text (thought 1, task 0.6, observations 0.25; the task alone
// weighs 1).
//
// Further stages follow the per-tool fusion (rank.go runs them; the
// figures are in docs/measurements.md, "Server, intent and budget-aware
// ranking" and "Everyday requests"). By default (Options.ServerWeight) a
// Hybrid ranking of a request with one ask ranks the servers as well, one
// document per server (its name, its tools' names and first sentences),
// by the vector signals (a server document's BM25F would count the tools'
// own words a third time), and lifts each tool by its server's score in
// proportion to the tool's own: tool × (1 + w × server) / (1 + w), so a
// server that fits the request carries none of its tools that do not. Then the semantic signal's
// confident best stays in reach: when its best tool for the request's
// whole text stands clear of its second (the second scores less than 0.85
// times the best) and the fused ranking puts it below the second place, it
// is moved up to the second. A unanimous semantic match ("add 2
// and 3" → a sum tool) can no longer be buried by one shared word ("add"
// in a memory tool) that the word signals and a server's lift repeat.
// Last, a tool the request names comes first: its name, its upstream name
// or a prefixed form (server__tool, mcp__server__tool, server.tool,
// server/tool), in an identifier-shaped word, or a plain word quoted or
// followed by "tool" (names.go).
//
// Measured and left off (settable only by the benchmarks and tests,
// through internal/rankopt): long descriptions read in windows (the
// semantic vector of a tool is its name and the first 256 bytes of its
// description; the sentences after them are embedded too, in windows of
// the same size, and a tool scores its best window, windows.go); an intent
// quota that splits a request into its asks and keeps each ask's best
// tools near the top, when the asks' best tools are on different servers;
// pseudo-relevance feedback (the request expanded with the words of its
// best tools, ranked again); word associations fitted on public requests
// (assoc.go); and, for comparison, the server lift of the rounds before
// (added to a tool's score, server documents ranked with BM25F too).
//
// # Learning from use
//
// With a usage memory (Options.Usage, a usage.Memory; off by default, at
// no cost), a ranking also asks what the caller's earlier requests like
// this one led to: [Retriever.Record] tells the memory that a request led
// to a successful call of a tool (by the caller of its context,
// usage.WithCaller), and every Retrieve, Search and Explain after it lifts
// the tools the neighbours of its request vote for, each by its vote v,
// s + v (every score then divided by the best when one passed 1), as the
// last stage before the tools a request names (usage.go). A request is compared by its sentence vector and by the
// words of it that the catalog's tools have (not names or ids), and votes
// that disagree, come from one other identity alone, or were cast for
// another version of a tool count for little or nothing (package usage).
// Explain says what each tool learned (ToolRank.Usage: the calls and
// identities behind its vote, and what it added). toolbench replay
// measures it (docs/measurements.md, "A search that learns from the calls
// it routes").
//
// [Retriever.Explain] lays a ranking open: the fused ranking Retrieve takes
// its matches from and each signal's own, so that a caller can tell why a
// tool was, or was not, retrieved.
//
// # Why it is ranked so
//
// Each choice above was measured on five public datasets and two sets of
// paraphrased requests, with toolbench eval and this package's tests
// (docs/measurements.md, "Retrieval quality", has every figure and the
// command that reproduces it): sentence searches find the tool of each
// part of a task; normalising by spread keeps a signal whose scores are all
// alike from pushing noise up; the weighted sum keeps, unlike reciprocal
// rank fusion, how much better the first candidates are than the fifth.
package retrieval
