// Package retrieval chooses, for each step of an agent, the few tools that
// matter out of a toolindex.Index of thousands.
//
// A Retriever turns the agent's state (Query: the user's task, the model's
// latest thought or tool request, recent tool results, the tools already
// used) into searches of the index's two signals — embedding similarity
// (SearchVector) and BM25F (SearchLexical) — and fuses them into one
// ranking. Pinned tools are always returned, tools the agent already used
// stay (sticky), and a server filter restricts what is retrieved.
//
// Quick start:
//
//	emb, _ := toolindex.NewLocalEmbedder(nil) // offline, deterministic
//	ix, _ := toolindex.New(emb, nil)
//	ix.Upsert(ctx, tools...)
//	r, _ := retrieval.New(ix, &retrieval.Options{K: 8})
//	matches, _ := r.Retrieve(ctx, retrieval.Query{Task: userMessage, Thought: lastAssistantText})
//
// The package also defines the search_tools meta-tool (SearchTool, and
// Retriever.SearchTools to answer its calls), so that a model can ask for
// tools it was not offered, and the retrieval metrics used to measure all
// this (Recall, Hit, Complete, MRR, NDCG).
//
// # How a query is ranked
//
// Each text of the Query (thought, task, observations) is searched as a
// whole and, when it has several sentences, sentence by sentence: an
// agent's task often asks for several things ("find the flight, then book
// the hotel, then email the plan"), and the tool for each of them is best
// found by its own sentence. Every search asks both signals for Depth
// candidates. Fusion then sums, per tool, the contribution of the whole
// text and the best contribution among its sentences, for each signal,
// weighted by the text's weight (thought 1, task 0.6, observations 0.25;
// the task alone weighs 1).
//
// # Measured quality
//
// On the public datasets in ../shared/datasets (bfcl: 2,574 tools, 2,351
// queries, many near-identical "__vN" variants of one tool; sealtools:
// 4,076 tools, 2,054 queries needing 2.7 tools on average), with the local
// embedder v2 and K = 10:
//
//	go test -tags datasets -run Quality ./retrieval/ -v -timeout 30m
//
//	dataset   mode               R@1    R@5   R@10  hit@5 cmp@10 nDCG10    MRR
//	bfcl      lexical (BM25F)  0.414  0.712  0.818  0.728  0.806  0.622  0.568
//	bfcl      vector (local)   0.403  0.689  0.785  0.702  0.773  0.602  0.552
//	bfcl      hybrid (default) 0.428  0.720  0.823  0.734  0.812  0.632  0.580
//	bfcl      hybrid, RRF      0.430  0.708  0.817  0.725  0.803  0.628  0.577
//	sealtools lexical (BM25F)  0.451  0.906  0.949  0.994  0.863  0.921  0.968
//	sealtools vector (local)   0.459  0.919  0.950  0.994  0.868  0.935  0.977
//	sealtools hybrid (default) 0.461  0.925  0.960  0.995  0.894  0.941  0.979
//	sealtools hybrid, RRF      0.457  0.890  0.940  0.995  0.833  0.918  0.978
//
// A plain BM25 over the same text scores recall@5 0.666 (bfcl) and 0.811
// (sealtools). What made the difference, each measured on both sets (with
// embedder v1):
//
//   - Sentence searches: hybrid recall@5 0.713 → 0.715 (bfcl) and 0.859 →
//     0.925 (sealtools), complete@10 0.784 → 0.896 on sealtools. Summing
//     every sentence's list instead of keeping the best one, or searching
//     sentences only, lost up to 26 points of BM25F recall@5 on sealtools
//     (and 3 on bfcl): generic tools that half-match every sentence float
//     up.
//   - Fusion: the weighted sum of best-normalised scores beat RRF in every
//     configuration tried (above: +0.8 and +3.8 points of recall@5); raw
//     cosine instead of normalised cosine changed nothing (±0.2).
//   - Parameters in the tool document: without them vector recall@5 on
//     bfcl falls from 0.679 to 0.611.
//
// bfcl is bounded by its variants: 53% of its gold tools have one to
// twenty-nine near-identical siblings ("get_version__v11" among twelve
// get_version variants), which no text signal can tell apart.
package retrieval
