package toolindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ConcatEmbedder joins the vectors of several embedders into one: each
// part's vector is normalised and scaled by the square root of its share
// of the weights, so that the cosine of two joined vectors is the
// weighted mean of the parts' cosines. It lets one vector signal of an
// Index carry, for example, the hashed n-grams of LocalEmbedder and a
// sentence encoder at once, without a second signal in the index.
//
// It is safe for concurrent use when its parts are.
type ConcatEmbedder struct {
	parts  []Embedder
	scales []float64 // √(weight/Σweights)
	id     string
}

// NewConcatEmbedder returns the embedder joining parts with weights (one
// per part, non-negative, not all zero).
func NewConcatEmbedder(parts []Embedder, weights []float64) (*ConcatEmbedder, error) {
	if len(parts) == 0 || len(weights) != len(parts) {
		return nil, fmt.Errorf("toolindex: NewConcatEmbedder: %d embedders and %d weights", len(parts), len(weights))
	}
	var sum float64
	for i, w := range weights {
		if parts[i] == nil {
			return nil, errors.New("toolindex: NewConcatEmbedder: nil Embedder")
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("toolindex: NewConcatEmbedder: weight %v", w)
		}
		sum += w
	}
	if sum == 0 {
		return nil, errors.New("toolindex: NewConcatEmbedder: all weights are zero")
	}
	c := &ConcatEmbedder{parts: parts, scales: make([]float64, len(parts))}
	ids := make([]string, len(parts))
	for i, w := range weights {
		c.scales[i] = math.Sqrt(w / sum)
		ids[i] = parts[i].ID() + "*" + strconv.FormatFloat(w/sum, 'g', 4, 64)
	}
	c.id = "concat(" + strings.Join(ids, ",") + ")"
	return c, nil
}

// ID names the parts and their shares of the weight.
func (c *ConcatEmbedder) ID() string { return c.id }

// Embed embeds texts with every part, in turn, and joins the vectors.
func (c *ConcatEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for p, e := range c.parts {
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("toolindex: concat part %s: %w", e.ID(), err)
		}
		if len(vecs) != len(texts) {
			return nil, fmt.Errorf("%w: %s returned %d vectors for %d texts", ErrDimension, e.ID(), len(vecs), len(texts))
		}
		for i, v := range vecs {
			if p > 0 && len(v) == 0 {
				return nil, fmt.Errorf("%w: %s returned an empty vector", ErrDimension, e.ID())
			}
			n := normalized(v)
			for j := range n {
				n[j] = float32(float64(n[j]) * c.scales[p])
			}
			out[i] = append(out[i], n...)
		}
	}
	return out, nil
}
