package toolindex_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

func TestSemanticDocument(t *testing.T) {
	long := strings.Repeat("word ", 100) + "tail"
	for _, c := range []struct {
		tool tool.Tool
		want string
	}{
		{tool.Tool{Name: "github__create_issue", Description: "Create an issue.", Server: "github",
			InputSchema: []byte(`{"type":"object","properties":{"repo":{"type":"string","description":"Repository"}}}`)},
			"github create issue\n\nCreate an issue."},
		{tool.Tool{Name: "ping"}, "ping"},
		{tool.Tool{Name: "x", Description: long}, "x\n\n" + strings.TrimSpace(strings.Repeat("word ", 51))},
		// A cut never splits a rune.
		{tool.Tool{Name: "y", Description: strings.Repeat("é", 200)}, "y\n\n" + strings.Repeat("é", 128)},
	} {
		if got := toolindex.SemanticDocument(c.tool); got != c.want {
			t.Errorf("SemanticDocument(%s) = %q, want %q", c.tool.Name, got, c.want)
		}
	}
}

// TestSemanticSignal: an index with a Semantic embedder embeds each tool's
// SemanticDocument with it, searches it apart from the main vectors, keeps
// both across changes, and saves and loads both.
func TestSemanticSignal(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(64)
	sem := newWordEmbedder(32)
	sem.id = "test-semantic:32"
	ix := newTestIndex(t, emb, &toolindex.Options{Semantic: sem}, testTools...)
	if ix.Semantic() != sem {
		t.Fatal("Semantic() is not the option")
	}
	_, texts := sem.stats()
	var want []string
	for _, tl := range testTools {
		want = append(want, toolindex.SemanticDocument(tl))
	}
	slices.Sort(texts)
	slices.Sort(want)
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Fatalf("semantic texts (-want +got):\n%s", diff)
	}
	hits, err := ix.SearchSemantic(ctx, wordVector("read file", 32), 2, nil)
	if err != nil || len(hits) == 0 || hits[0].Tool.Name != "fs__read_file" {
		t.Fatalf("SearchSemantic = %v, %v; want fs__read_file first", names(hits), err)
	}
	if _, err := ix.SearchSemantic(ctx, wordVector("read file", 64), 2, nil); !errors.Is(err, toolindex.ErrDimension) {
		t.Errorf("query of the main dimension: %v, want ErrDimension", err)
	}
	if _, err := ix.SearchVector(ctx, wordVector("read file", 32), 2, nil); !errors.Is(err, toolindex.ErrDimension) {
		t.Errorf("semantic query to SearchVector: %v, want ErrDimension", err)
	}

	// A change re-embeds with both; a removal leaves both collections.
	changed := testTools[4]
	changed.Description = "Print a document on paper."
	changed.Hash = ""
	sem.reset()
	if err := ix.Apply(ctx, tool.Change{Changed: []tool.Tool{changed}, Removed: []string{"math__factorial"}}); err != nil {
		t.Fatal(err)
	}
	if _, texts := sem.stats(); len(texts) != 1 || !strings.Contains(texts[0], "paper") {
		t.Fatalf("semantic texts after a change: %q", texts)
	}
	hits, _ = ix.SearchSemantic(ctx, wordVector("document paper", 32), 10, nil)
	if len(hits) != len(testTools)-1 || hits[0].Tool.Name != "fs__read_file" {
		t.Fatalf("after change: %v; want the changed tool first of %d", names(hits), len(testTools)-1)
	}
	for _, h := range hits {
		if h.Tool.Name == "math__factorial" {
			t.Error("a removed tool is still in the semantic collection")
		}
	}

	dir := filepath.Join(t.TempDir(), "idx")
	if err := ix.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := toolindex.Load(ctx, dir, emb, &toolindex.Options{Semantic: sem})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"weather forecast", "paper document", "pull requests"} {
		a, _ := ix.SearchSemantic(ctx, wordVector(q, 32), 3, nil)
		b, err := got.SearchSemantic(ctx, wordVector(q, 32), 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("SearchSemantic(%q) after Load (-want +got):\n%s", q, diff)
		}
	}
	if _, err := toolindex.Load(ctx, dir, emb, nil); !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Errorf("Load without the semantic embedder: %v, want ErrEmbedderMismatch", err)
	}
	other := newWordEmbedder(32)
	other.id = "other:32"
	if _, err := toolindex.Load(ctx, dir, emb, &toolindex.Options{Semantic: other}); !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Errorf("Load with another semantic embedder: %v, want ErrEmbedderMismatch", err)
	}
	plain := newTestIndex(t, emb, nil, testTools...)
	if _, err := plain.SearchSemantic(ctx, wordVector("x", 32), 1, nil); !errors.Is(err, toolindex.ErrNoSemantic) {
		t.Errorf("SearchSemantic without a semantic embedder: %v, want ErrNoSemantic", err)
	}
	pdir := filepath.Join(t.TempDir(), "plain")
	if err := plain.Save(pdir); err != nil {
		t.Fatal(err)
	}
	if _, err := toolindex.Load(ctx, pdir, emb, &toolindex.Options{Semantic: sem}); !errors.Is(err, toolindex.ErrEmbedderMismatch) {
		t.Errorf("Load of an index saved without one, with a semantic embedder: %v, want ErrEmbedderMismatch", err)
	}
}
