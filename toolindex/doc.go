// Package toolindex knows which tools exist and finds them: it holds every
// tool once, with one embedding and one lexical entry each, updates them
// incrementally, and saves them to disk.
//
//   - Tool is one callable tool (qualified Name, Server, Description,
//     InputSchema, Annotations) with a content Hash of what the model is sent.
//     Change is how one server's tool list changed, as mcp.Hub reports it.
//   - Document (and DocumentFields) is a tool's search text: its name split
//     into words, description, parameter names, descriptions and enum values,
//     and server. Retrieval quality starts there.
//   - Embedder embeds batches of texts. LocalEmbedder is the offline,
//     deterministic default (no model download, no key); OpenAIEmbedder talks
//     to any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM,
//     LM Studio, llama.cpp server), batched, with retries.
//   - Index holds the tools: their vectors in a chromem-go collection
//     (precomputed embeddings, cosine similarity) and a BM25F lexical index
//     with postings lists over three fields (name, description, parameters).
//     Upsert embeds only new or changed tools (by content hash), in batches,
//     without blocking searches; Remove and Apply keep it in step with
//     servers. SearchVector and SearchLexical return scored Hits, optionally
//     filtered; package retrieval fuses them.
//   - Save writes an Index to a directory (manifest with format version,
//     embedder ID and dimension; tools with hashes; vectors as little-endian
//     float32), atomically; Load reads it back without embedding anything
//     and refuses an index built by another embedder (ErrEmbedderMismatch).
//
// Quick start:
//
//	emb, _ := toolindex.NewLocalEmbedder(nil)
//	ix, _ := toolindex.New(emb, nil)
//	ix.Upsert(ctx, tools...)                     // embeds each tool once
//	q, _ := emb.Embed(ctx, []string{"what's the weather in Paris"})
//	hits, _ := ix.SearchVector(ctx, q[0], 5, nil) // by meaning
//	words := ix.SearchLexical("weather Paris", 5, nil) // by words (BM25F)
//	ix.Save(dir)                                   // later: toolindex.Load(ctx, dir, emb, nil)
package toolindex
