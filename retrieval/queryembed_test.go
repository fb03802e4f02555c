package retrieval_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/toolindex"
)

// queryLog is the built-in USE that records which texts each path embeds.
type queryLog struct {
	*encoder.USE
	mu            sync.Mutex
	docs, queries []string
}

func (q *queryLog) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	q.mu.Lock()
	q.docs = append(q.docs, texts...)
	q.mu.Unlock()
	return q.USE.Embed(ctx, texts)
}

func (q *queryLog) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	q.mu.Lock()
	q.queries = append(q.queries, texts...)
	q.mu.Unlock()
	return q.USE.EmbedQueries(ctx, texts)
}

// TestQueriesUseEmbedQueries: a step's texts go through the semantic
// embedder's EmbedQueries when it has one (USE's faster path for queries),
// the tools' documents through Embed, and the ranking still finds the
// paraphrased tool.
func TestQueriesUseEmbedQueries(t *testing.T) {
	use, err := encoder.NewUSE(nil)
	if err != nil {
		t.Fatal(err)
	}
	sem := &queryLog{USE: use}
	local, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(local, &toolindex.Options{Semantic: sem})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ix.Upsert(ctx, everything...); err != nil {
		t.Fatal(err)
	}
	docs := len(sem.docs)
	if docs != len(everything) {
		t.Fatalf("Upsert embedded %d documents with Embed, want %d", docs, len(everything))
	}
	r := newRetriever(t, ix, &retrieval.Options{Mode: retrieval.Semantic, K: 3})
	ms, err := r.Retrieve(ctx, retrieval.Query{Task: "add 2 and 3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Tool.Name != "get-sum" {
		t.Errorf("ranked %v, want get-sum first", names(ms))
	}
	if !slices.Contains(sem.queries, "add 2 and 3") {
		t.Errorf("EmbedQueries embedded %q, want the task among them", sem.queries)
	}
	if len(sem.docs) != docs {
		t.Errorf("Embed embedded %q after indexing, want nothing (queries go to EmbedQueries)", sem.docs[docs:])
	}
}
