package toolindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// Embedder turns texts into vectors, a batch at a time: one call embeds all
// of texts (an HTTP embedder sends them in as few requests as its batch
// size allows), and returns one vector per text, in order, all of the same
// length.
//
// ID names the embedder, its model and its dimension (for example
// "openai:text-embedding-3-small:1536@api.openai.com"). Two embedders with
// the same ID must produce the same vectors for the same texts: a saved
// [Index] records the ID and [Load] refuses vectors made by another one.
//
// Implementations must be safe for concurrent use.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	ID() string
}

var (
	// ErrEmbedderMismatch reports a saved index whose vectors were made by
	// another embedder than the one given to [Load].
	ErrEmbedderMismatch = errors.New("toolindex: embedder mismatch")
	// ErrDimension reports a vector whose length differs from the index's
	// or the embedder's dimension, or an embedder that returned a wrong
	// number of vectors.
	ErrDimension = errors.New("toolindex: wrong vector dimension")
	// ErrCorrupt reports a saved index file that is missing, truncated or
	// does not match its manifest. The error names the file.
	ErrCorrupt = errors.New("toolindex: corrupt saved index")
	// ErrInvalidTool reports a tool that cannot be indexed (no name).
	ErrInvalidTool = errors.New("toolindex: invalid tool")
	// ErrNoSemantic reports a semantic search in an index without a
	// Semantic embedder.
	ErrNoSemantic = errors.New("toolindex: index has no semantic embedder")
)

// embedBatched embeds texts with emb in batches of at most size texts, one
// Embed call per batch, up to workers calls at a time, and checks that every
// batch returned one vector per text, all of length dim (or of one common
// length when dim is 0). It returns the vectors, in the order of texts, and
// their length. The first failure cancels the calls still running.
func embedBatched(ctx context.Context, emb Embedder, texts []string, size, workers, dim int) ([][]float32, int, error) {
	out := make([][]float32, len(texts))
	nb := (len(texts) + size - 1) / size
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		next     int
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	for range min(workers, nb) {
		wg.Go(func() {
			for {
				mu.Lock()
				b := next
				next++
				stop := firstErr != nil
				mu.Unlock()
				if b >= nb || stop {
					return
				}
				start, end := b*size, min((b+1)*size, len(texts))
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				vecs, err := emb.Embed(ctx, texts[start:end])
				if err != nil {
					fail(fmt.Errorf("toolindex: embed texts %d..%d with %s: %w", start, end-1, emb.ID(), err))
					return
				}
				if len(vecs) != end-start {
					fail(fmt.Errorf("%w: %s returned %d vectors for %d texts", ErrDimension, emb.ID(), len(vecs), end-start))
					return
				}
				copy(out[start:end], vecs)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, dim, firstErr
	}
	for i, v := range out {
		if dim == 0 {
			dim = len(v)
		}
		if len(v) == 0 || len(v) != dim {
			return nil, dim, fmt.Errorf("%w: %s returned a vector of length %d for text %d, want %d", ErrDimension, emb.ID(), len(v), i, dim)
		}
	}
	return out, dim, nil
}

// normalized returns v scaled to unit length, in a new slice. The norm is
// computed in float64 so that chromem-go accepts the result as normalised
// and does not keep a second copy. A zero vector is returned as zeros.
func normalized(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
