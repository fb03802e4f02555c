package encoder_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// A Model2Vec model drives a toolindex.Index like any embedder, and an
// index saved with one model is refused with another.
func TestModel2VecWithIndex(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	load := func(name, dtype string) *encoder.Model2Vec {
		t.Helper()
		m, err := encoder.LoadModel2Vec(writeTinyModel(t, parent, name, dtype, true), nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	emb := load("tiny", "F32")
	ix, err := toolindex.New(emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := []tool.Tool{
		{Name: "forecast", Server: "w", Description: "Search the weather."},
		{Name: "coffee", Server: "c", Description: "A café, naïve and playing."},
	}
	if _, err := ix.Upsert(ctx, tools...); err != nil {
		t.Fatal(err)
	}
	q, err := emb.Embed(ctx, []string{"weather"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := ix.SearchVector(ctx, q[0], 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		got = append(got, h.Tool.Name)
	}
	if diff := cmp.Diff([]string{"forecast"}, got); diff != "" {
		t.Errorf("SearchVector(weather) (-want +got):\n%s", diff)
	}

	dir := filepath.Join(t.TempDir(), "index")
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	// The ID names the directory, so the same files under another name
	// count as another model.
	if _, err := toolindex.Load(ctx, dir, load("tiny-copy", "F32"), nil); !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Errorf("Load with a copy of the model: err = %v, want ErrEmbedderMismatch", err)
	}
	if _, err := toolindex.Load(ctx, dir, load("tiny", "F32"), nil); err != nil {
		t.Errorf("Load with the same model: %v", err)
	}
	if _, err := toolindex.Load(ctx, dir, load("tiny", "F16"), nil); !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Errorf("Load with the model in F16: err = %v, want ErrEmbedderMismatch", err)
	}
}

// A Model2Vec model the user brings can be the index's semantic signal
// (what toolsift.Options.Semantic takes): it embeds each tool's
// SemanticDocument, and the retriever's semantic and hybrid modes use it.
func TestModel2VecAsSemantic(t *testing.T) {
	ctx := context.Background()
	m, err := encoder.LoadModel2Vec(writeTinyModel(t, t.TempDir(), "tiny", "F32", true), nil)
	if err != nil {
		t.Fatal(err)
	}
	local, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(local, &toolindex.Options{Semantic: m})
	if err != nil {
		t.Fatal(err)
	}
	tools := []tool.Tool{
		{Name: "forecast", Server: "w", Description: "Search the weather."},
		{Name: "coffee", Server: "c", Description: "A café, naïve and playing."},
	}
	if _, err := ix.Upsert(ctx, tools...); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []retrieval.Mode{retrieval.Semantic, retrieval.Hybrid} {
		r, err := retrieval.New(ix, &retrieval.Options{Mode: mode, K: 1})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := r.Retrieve(ctx, retrieval.Query{Task: "weather"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Tool.Name != "forecast" {
			t.Errorf("%v: %v, want forecast", mode, ms)
		}
	}
}
