package toolindex_test

import (
	"context"
	"math"
	"testing"

	"github.com/toolsift/toolsift/toolindex"
)

// fixedEmbedder returns the vector its map gives each text.
type fixedEmbedder struct {
	id   string
	vecs map[string][]float32
}

func (f fixedEmbedder) ID() string { return f.id }
func (f fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = f.vecs[t]
	}
	return out, nil
}

func TestConcatEmbedderCosineIsWeightedMean(t *testing.T) {
	a := fixedEmbedder{"a", map[string][]float32{"x": {1, 0}, "y": {1, 1}}}       // cos(x,y) = 1/√2
	b := fixedEmbedder{"b", map[string][]float32{"x": {0, 2, 0}, "y": {3, 0, 0}}} // cos(x,y) = 0
	c, err := toolindex.NewConcatEmbedder([]toolindex.Embedder{a, b}, []float64{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.ID(), "concat(a*0.75,b*0.25)"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
	v, err := c.Embed(context.Background(), []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	var dot, nx, ny float64
	for i := range v[0] {
		dot += float64(v[0][i]) * float64(v[1][i])
		nx += float64(v[0][i]) * float64(v[0][i])
		ny += float64(v[1][i]) * float64(v[1][i])
	}
	if len(v[0]) != 5 || math.Abs(nx-1) > 1e-6 || math.Abs(ny-1) > 1e-6 {
		t.Fatalf("len %d, squared norms %v %v; want 5, 1, 1", len(v[0]), nx, ny)
	}
	if want := 0.75 / math.Sqrt2; math.Abs(dot-want) > 1e-6 {
		t.Errorf("cosine %v, want %v", dot, want)
	}
}

func TestNewConcatEmbedderErrors(t *testing.T) {
	a := fixedEmbedder{id: "a"}
	tests := []struct {
		name    string
		parts   []toolindex.Embedder
		weights []float64
	}{
		{"no parts", nil, nil},
		{"weights mismatch", []toolindex.Embedder{a}, []float64{1, 2}},
		{"negative", []toolindex.Embedder{a, a}, []float64{1, -1}},
		{"all zero", []toolindex.Embedder{a}, []float64{0}},
		{"NaN", []toolindex.Embedder{a}, []float64{math.NaN()}},
		{"nil part", []toolindex.Embedder{nil}, []float64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := toolindex.NewConcatEmbedder(tt.parts, tt.weights); err == nil {
				t.Error("no error")
			}
		})
	}
}
