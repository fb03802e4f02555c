//go:build datasets

package toolindex_test

// Tests on the public datasets, which live outside the repository
// (docs/datasets.md): go test -tags datasets ./toolindex/ (.ci/run runs it
// when they are beside the checkout, or in $TOOLSIFT_DATASETS).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/toolindex"
)

// TestSaveLoadLocalEmbedderDataset round-trips part of the BFCL catalog
// with the real local embedder and compares search results for its queries.
func TestSaveLoadLocalEmbedderDataset(t *testing.T) {
	ctx := context.Background()
	root := os.Getenv("TOOLSIFT_DATASETS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "datasets")
	}
	if _, err := os.Stat(filepath.Join(root, "bfcl", "tools.jsonl")); err != nil {
		t.Fatalf("the BFCL dataset is missing (docs/datasets.md; or set TOOLSIFT_DATASETS): %v", err)
	}
	tools, queries := loadDataset(t, "bfcl")
	tools, queries = tools[:120], queries[:20] // the local embedder is slow under -race
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ix := newTestIndex(t, emb, nil, tools...)
	dir := t.TempDir()
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := toolindex.Load(ctx, dir, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(queries))
	for i, q := range queries {
		texts[i] = q.Query
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range texts {
		want, err := ix.SearchVector(ctx, vecs[i], 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		have, err := got.SearchVector(ctx, vecs[i], 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, have); diff != "" {
			t.Errorf("SearchVector(%q) after Load (-want +got):\n%s", q, diff)
		}
		if diff := cmp.Diff(ix.SearchLexical(q, 10, nil), got.SearchLexical(q, 10, nil)); diff != "" {
			t.Errorf("SearchLexical(%q) after Load (-want +got):\n%s", q, diff)
		}
	}
	other, err := toolindex.NewLocalEmbedder(&toolindex.LocalOptions{Dims: 256})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(ctx, dir, other, nil); !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Errorf("Load with a 256-dimension local embedder: %v, want ErrEmbedderMismatch", err)
	}
}
