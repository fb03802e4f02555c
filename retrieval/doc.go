// Package retrieval chooses, for each step of an agent, the few tools that
// matter out of a toolindex.Index of thousands.
//
// A Retriever turns the agent's state (Query: the user's task, the model's
// latest thought or tool request, recent tool results, the tools already
// used) into searches of the index's signals — BM25F (SearchLexical), the
// Embedder's vectors (SearchVector) and, when the index has a Semantic
// embedder, the sentence encoder's vectors (SearchSemantic) — and fuses
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
// Retriever.Search ranks for one need (a Go caller's k tools), and the
// search_tools meta-tool (SearchTool, and Retriever.SearchTools, Search's
// JSON form with the model's rules and messages) lets a model ask for tools
// it was not offered. The package also has the retrieval metrics used to
// measure all this (Recall, Hit, Complete, MRR, NDCG).
//
// # How a query is ranked
//
// Each text of the Query (thought, task, observations) is searched as a
// whole and, when it has several sentences, sentence by sentence: an
// agent's task often asks for several things ("find the flight, then book
// the hotel, then email the plan"), and the tool for each of them is best
// found by its own sentence. Every search asks every signal for Depth
// candidates. Fusion (WeightedSum) scores a tool in each list by how far
// it stands above the list's last candidate, in standard deviations of
// the list's scores, then sums, per tool and signal, the contribution of
// the whole text and the best contribution among its sentences, weighted
// by the signal (DefaultWeights: BM25F 1, semantic 0.75, vector 0.5) and
// by the text (thought 1, task 0.6, observations 0.25; the task alone
// weighs 1).
//
// # Measured quality
//
// toolbench eval, hybrid mode, K = 20 (the agent's), recall@5 before the
// semantic signal → now (README and docs/encoder-measurements.md have
// every mode and the commands): bfcl 0.720 → 0.731, sealtools 0.927 →
// 0.936, stabletoolbench 0.733 → 0.745, restbench 0.531 → 0.527, azuremcp
// 0.947 → 0.975, and on the paraphrase sets of benchmarks/testdata
// (requests in other words than the tools') 0.448 → 0.496 (MCP catalog)
// and 0.437 → 0.580 (BFCL catalog). A plain BM25 over the same text
// scores recall@5 0.666 (bfcl) and 0.811 (sealtools). What made the
// difference, each measured on every set:
//
//   - Sentence searches: hybrid recall@5 0.713 → 0.715 (bfcl) and 0.859 →
//     0.925 (sealtools), complete@10 0.784 → 0.896 on sealtools. Summing
//     every sentence's list instead of keeping the best one, or searching
//     sentences only, lost up to 26 points of BM25F recall@5 on sealtools
//     (and 3 on bfcl): generic tools that half-match every sentence float
//     up.
//   - Normalising each list by its spread rather than by its best score:
//     with the sentence encoder at weight 0.75, recall@5 on sealtools is
//     0.880 divided by the best, 0.920 min-max, 0.936 by spread, and on
//     stabletoolbench 0.711, 0.728, 0.746: dividing by the best lets a
//     signal whose scores are all alike (cosines of a weak encoder) push
//     noise up.
//   - The encoder's text: name and the first 256 bytes of description,
//     not the whole document with parameters: better on five of eight sets
//     (by up to 0.022 on the MCP paraphrase set), worse on two (restbench
//     −0.004, the 32 catalog tasks −0.031: one task), at half the cost.
//   - Weighted sum against RRF: the weighted sum won in every
//     configuration tried (+0.8 to +3.8 points of recall@5): unlike RRF it
//     keeps how much better the first candidates are than the fifth.
//   - Parameters in the tool document: without them vector recall@5 on
//     bfcl falls from 0.679 to 0.611.
//
// bfcl is bounded by its variants: 53% of its gold tools have one to
// twenty-nine near-identical siblings ("get_version__v11" among twelve
// get_version variants), which no text signal can tell apart.
package retrieval
