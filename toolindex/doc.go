// Package toolindex knows which tools exist and finds them: it holds every
// tool once, with one embedding and one lexical entry each, updates them
// incrementally, and saves them to disk.
//
//   - A tool is a [tool.Tool] (qualified Name, Server, Description,
//     InputSchema, Annotations) with a content Hash of what the model is sent;
//     a [tool.Change] is how one server's tool list changed, as upstream.Hub
//     reports it.
//   - [Document] (and [DocumentFields]) is a tool's search text: its name
//     split into words, description, parameter names, descriptions and enum
//     values, and server. Retrieval quality starts there.
//   - [SemanticDocument] is what a sentence encoder reads of a tool: its name
//     and the start of its description.
//   - [Embedder] embeds batches of texts. [LocalEmbedder] is the offline,
//     deterministic hashed n-gram embedder (no model download, no key).
//     Embedders that need more live at the edge, outside the ranking code:
//     provider.Embedder talks to any OpenAI-compatible
//     /v1/embeddings endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp
//     server), batched, with retries; package encoder has pretrained
//     encoders in pure Go.
//   - [Index] holds the tools: their vectors (precomputed embeddings,
//     cosine similarity), optionally a Semantic embedder's vectors of their
//     [SemanticDocument] beside them, and a BM25F lexical index with postings lists over
//     three fields (name, description, parameters). [Index.Upsert] embeds
//     only new or changed tools (by content hash), in batches, without
//     blocking searches, and takes vectors from [Options].Cache (a
//     [VectorCache], keyed by the document's hash) before embedding;
//     [Index.Remove] and [Index.Apply] keep it in step with servers.
//     [Index.SearchVector], [Index.SearchSemantic] and [Index.SearchLexical]
//     return scored [Hit]s, optionally filtered; package retrieval fuses
//     them. [Index.SearchVectorBatch] and [Index.SearchSemanticBatch] search
//     for several queries (a step's parts) in one pass over the vectors.
//     The Embedder's vectors are held as int16 codes (two bytes per
//     dimension), the Semantic embedder's as int8 codes, each with one
//     factor per vector that makes it unit length again. They are stored by
//     blocks of 64 tools, dimension by dimension, so that a search reads
//     only the dimensions its query has (a hashed n-gram query sets a few
//     hundred of 1,024). An int16 block is kept sparse when that saves a
//     quarter of its room or more, as hashed n-gram vectors always do (on
//     average 137 to 336 of 1,024 dimensions set on the public sets): per
//     dimension, a mask of the tools that have a code and their codes,
//     packed, about 660–700 bytes a tool instead of 2,048. A search is one
//     exact scan (AVX2 kernels where the CPU has them; the sparse one
//     expands each eight tools' codes with a byte shuffle and keeps the
//     dense kernel's arithmetic, so the scores are the same; AVX-512 ones,
//     sixteen tools a register, where it has AVX-512 VBMI2, with the same
//     arithmetic per tool and so the same scores; split between
//     two goroutines from 4,096 tools) into a bounded heap. A write makes
//     the blocks it touches dense until the writer ends (Upsert, Remove,
//     Apply and Load encode them again). int16 cosines are within 1e-4 of
//     float32 ones;
//     rankings on the public and paraphrase sets are those of float32
//     vectors to four places of recall@5 (docs/measurements.md, "Vector
//     search").
//   - [Index.Save] writes an [Index] to a directory (manifest with format
//     version, embedder IDs and dimensions; tools with hashes; vectors as
//     little-endian float32, one file per signal), atomically; [Load] reads
//     it back without embedding anything and refuses an index built by other
//     embedders ([ErrEmbedderMismatch]).
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
