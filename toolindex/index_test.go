package toolindex_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// wordEmbedder is a deterministic test Embedder: each lowercased word of a
// text adds 1 to one of dim dimensions chosen by hashing the word, so texts
// that share words have similar vectors. It records every call.
type wordEmbedder struct {
	dim int
	id  string

	mu    sync.Mutex
	calls int
	texts []string
	gate  chan struct{} // when set, Embed waits for it (or ctx)
}

func newWordEmbedder(dim int) *wordEmbedder {
	return &wordEmbedder{dim: dim, id: fmt.Sprintf("test-words:%d", dim)}
}

func (e *wordEmbedder) ID() string { return e.id }

func (e *wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	e.texts = append(e.texts, texts...)
	gate := e.gate
	e.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = wordVector(t, e.dim)
	}
	return out, nil
}

func wordVector(text string, dim int) []float32 {
	v := make([]float32, dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dim)]++
	}
	return v
}

func (e *wordEmbedder) stats() (calls int, texts []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls, slices.Clone(e.texts)
}

func (e *wordEmbedder) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls, e.texts = 0, nil
}

var testTools = []tool.Tool{
	{Name: "weather__get_forecast", Server: "weather", Description: "Get the weather forecast for a city.",
		InputSchema: []byte(`{"type":"object","properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer"}}}`)},
	{Name: "weather__get_alerts", Server: "weather", Description: "List active severe weather alerts for a US state.",
		InputSchema: []byte(`{"type":"object","properties":{"state":{"type":"string","description":"Two-letter state code"}}}`)},
	{Name: "github__create_issue", Server: "github", Description: "Create a new issue in a GitHub repository.",
		InputSchema: []byte(`{"type":"object","properties":{"repo":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"}}}`)},
	{Name: "github__list_pull_requests", Server: "github", Description: "List open pull requests of a repository.",
		InputSchema: []byte(`{"type":"object","properties":{"repo":{"type":"string"},"state":{"type":"string","enum":["open","closed"]}}}`)},
	{Name: "fs__read_file", Server: "fs", Description: "Read the contents of a file from disk.",
		InputSchema: []byte(`{"type":"object","properties":{"path":{"type":"string","description":"File path"}}}`)},
	{Name: "math__factorial", Server: "math", Description: "Calculate the factorial of a number."},
}

// newTestIndex is testenv.Index.
var newTestIndex = testenv.Index

func names(hits []toolindex.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Tool.Name
	}
	return out
}

func allNames(ix *toolindex.Index) []string {
	var out []string
	for t := range ix.All() {
		out = append(out, t.Name)
	}
	return out
}

func TestUpsertEmbedsOnlyNewContent(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(64)
	ix := newTestIndex(t, emb, &toolindex.Options{BatchSize: 4, Concurrency: 1})

	st, err := ix.Upsert(ctx, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toolindex.UpsertStats{Added: 6, Embedded: 6, Batches: 2}, st); diff != "" {
		t.Errorf("first Upsert stats (-want +got):\n%s", diff)
	}
	calls, texts := emb.stats()
	if calls != 2 {
		t.Errorf("first Upsert: %d Embed calls, want 2 (6 tools in batches of 4)", calls)
	}
	var wantTexts []string
	for _, tool := range testTools {
		wantTexts = append(wantTexts, toolindex.Document(tool))
	}
	if diff := cmp.Diff(wantTexts, texts); diff != "" {
		t.Errorf("embedded texts (-want +got):\n%s", diff)
	}

	// The same tools again: nothing is embedded.
	emb.reset()
	st, err = ix.Upsert(ctx, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toolindex.UpsertStats{Unchanged: 6}, st); diff != "" {
		t.Errorf("repeated Upsert stats (-want +got):\n%s", diff)
	}
	if calls, _ := emb.stats(); calls != 0 {
		t.Errorf("repeated Upsert made %d Embed calls, want 0", calls)
	}

	// One changed description, one title-only change, one new tool.
	changed := testTools[1]
	changed.Description = "List active severe weather warnings for a US state."
	retitled := testTools[2]
	retitled.Title = "Open a ticket"
	added := tool.Tool{Name: "fs__write_file", Description: "Write a file to disk."}
	emb.reset()
	st, err = ix.Upsert(ctx, changed, retitled, added)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toolindex.UpsertStats{Added: 1, Changed: 1, Unchanged: 1, Embedded: 2, Batches: 1}, st); diff != "" {
		t.Errorf("update stats (-want +got):\n%s", diff)
	}
	_, texts = emb.stats()
	if diff := cmp.Diff([]string{toolindex.Document(changed), toolindex.Document(added)}, texts); diff != "" {
		t.Errorf("re-embedded texts (-want +got):\n%s", diff)
	}
	got, ok := ix.Get(retitled.Name)
	if !ok || got.Title != "Open a ticket" {
		t.Errorf("Get(%q) = %+v, %v; want the new title", retitled.Name, got, ok)
	}
	if got.Hash != tool.ContentHash(retitled) {
		t.Errorf("stored Hash = %q, want ContentHash", got.Hash)
	}
	if hits := ix.SearchLexical("ticket", 5, nil); !slices.Equal(names(hits), []string{retitled.Name}) {
		t.Errorf("SearchLexical(ticket) = %v, want the retitled tool", names(hits))
	}
	if ix.Len() != 7 {
		t.Errorf("Len = %d, want 7", ix.Len())
	}
	// The changed description is searchable, the old one is gone.
	if hits := ix.SearchLexical("warnings", 5, nil); !slices.Equal(names(hits), []string{"weather__get_alerts"}) {
		t.Errorf("SearchLexical(warnings) = %v", names(hits))
	}
	if hits := ix.SearchLexical("alerts severe", 5, nil); len(hits) != 1 {
		t.Errorf("SearchLexical(alerts severe) = %v, want the alerts tool only", names(hits))
	}
}

// TestUpsertConcurrentBatches embeds one tool per batch, four batches at a
// time, and checks that every tool got its own vector.
func TestUpsertConcurrentBatches(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(256)
	ix := newTestIndex(t, emb, &toolindex.Options{BatchSize: 1, Concurrency: 4})
	st, err := ix.Upsert(ctx, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	if st.Batches != len(testTools) || st.Embedded != len(testTools) {
		t.Errorf("stats = %+v, want %d batches of one", st, len(testTools))
	}
	if calls, _ := emb.stats(); calls != len(testTools) {
		t.Errorf("%d Embed calls, want %d", calls, len(testTools))
	}
	for _, tool := range testTools {
		hits, err := ix.SearchVector(ctx, wordVector(toolindex.Document(tool), 256), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Tool.Name != tool.Name || hits[0].Score < 0.999 {
			t.Errorf("self search for %s = %+v", tool.Name, hits)
		}
	}

	// A failing batch fails the Upsert and cancels the others.
	boom := errors.New("boom")
	failing := newTestIndex(t, &failNth{n: 3, err: boom}, &toolindex.Options{BatchSize: 1, Concurrency: 2})
	if _, err := failing.Upsert(ctx, testTools...); !errors.Is(err, boom) {
		t.Errorf("error = %v, want boom", err)
	}
	if failing.Len() != 0 {
		t.Errorf("Len after a failed Upsert = %d, want 0", failing.Len())
	}
}

// failNth fails its n-th Embed call and every call after it.
type failNth struct {
	n     int
	err   error
	mu    sync.Mutex
	calls int
}

func (*failNth) ID() string { return "fail-nth" }
func (e *failNth) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls++
	c := e.calls
	e.mu.Unlock()
	if c >= e.n {
		return nil, e.err
	}
	return [][]float32{wordVector(texts[0], 8)}, nil
}

func TestUpsertLastDuplicateWins(t *testing.T) {
	emb := newWordEmbedder(32)
	a := tool.Tool{Name: "t", Description: "first"}
	b := tool.Tool{Name: "t", Description: "second"}
	ix := newTestIndex(t, emb, nil)
	st, err := ix.Upsert(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(toolindex.UpsertStats{Added: 1, Embedded: 1, Batches: 1}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if got, _ := ix.Get("t"); got.Description != "second" {
		t.Errorf("Description = %q, want second", got.Description)
	}
}

// badEmbedder returns what it is told to, to test the index's checks.
type badEmbedder struct {
	vecs func(n int) [][]float32
	err  error
}

func (badEmbedder) ID() string { return "bad" }
func (e badEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if e.err != nil {
		return nil, e.err
	}
	return e.vecs(len(texts)), nil
}

func TestUpsertRejectsBadEmbeddings(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		emb  badEmbedder
		want error
	}{
		{"error", badEmbedder{err: boom}, boom},
		{"too few vectors", badEmbedder{vecs: func(n int) [][]float32 { return make([][]float32, n-1) }}, toolindex.ErrDimension},
		{"ragged", badEmbedder{vecs: func(n int) [][]float32 {
			out := make([][]float32, n)
			for i := range out {
				out[i] = make([]float32, 3+i)
				out[i][0] = 1
			}
			return out
		}}, toolindex.ErrDimension},
		{"empty vector", badEmbedder{vecs: func(n int) [][]float32 { return make([][]float32, n) }}, toolindex.ErrDimension},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newTestIndex(t, tt.emb, nil)
			_, err := ix.Upsert(context.Background(), testTools[:2]...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Upsert error = %v, want %v", err, tt.want)
			}
			if ix.Len() != 0 {
				t.Errorf("Len after failed Upsert = %d, want 0", ix.Len())
			}
		})
	}
	t.Run("dimension change", func(t *testing.T) {
		emb := newWordEmbedder(16)
		ix := newTestIndex(t, emb, nil, testTools[0])
		emb.dim = 32
		if _, err := ix.Upsert(context.Background(), testTools[1]); !errors.Is(err, toolindex.ErrDimension) {
			t.Errorf("Upsert with another dimension: error = %v, want ErrDimension", err)
		}
		if ix.Len() != 1 {
			t.Errorf("Len = %d, want 1", ix.Len())
		}
	})
	t.Run("no name", func(t *testing.T) {
		ix := newTestIndex(t, newWordEmbedder(8), nil)
		if _, err := ix.Upsert(context.Background(), tool.Tool{Description: "x"}); !errors.Is(err, toolindex.ErrInvalidTool) {
			t.Errorf("error = %v, want ErrInvalidTool", err)
		}
	})
}

func TestRemoveAndApply(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(64)
	ix := newTestIndex(t, emb, nil, testTools...)

	if n := ix.Remove("fs__read_file", "nope", "fs__read_file"); n != 1 {
		t.Errorf("Remove = %d, want 1", n)
	}
	if _, ok := ix.Get("fs__read_file"); ok {
		t.Error("removed tool still found by Get")
	}
	if hits := ix.SearchLexical("read file contents disk", 10, nil); len(hits) != 0 {
		t.Errorf("lexical search finds removed tool: %v", names(hits))
	}
	vec := wordVector(toolindex.Document(testTools[4]), 64)
	hits, err := ix.SearchVector(ctx, vec, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names(hits), "fs__read_file") || len(hits) != 5 {
		t.Errorf("vector search after Remove = %v, want the 5 others", names(hits))
	}

	emb.reset()
	changed := testTools[0]
	changed.Description = "Get a ten-day weather forecast for a city."
	err = ix.Apply(ctx, tool.Change{
		Server:  "weather",
		Added:   []tool.Tool{{Name: "weather__get_radar", Server: "weather", Description: "Radar image of a region."}},
		Changed: []tool.Tool{changed, testTools[1]}, // the second is not really changed
		Removed: []string{"github__create_issue"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"github__list_pull_requests", "math__factorial", "weather__get_alerts", "weather__get_forecast", "weather__get_radar"}
	if diff := cmp.Diff(want, allNames(ix)); diff != "" {
		t.Errorf("All after Apply (-want +got):\n%s", diff)
	}
	if calls, texts := emb.stats(); calls != 1 || len(texts) != 2 {
		t.Errorf("Apply embedded %d texts in %d calls, want 2 in 1", len(texts), calls)
	}
	if got, _ := ix.Get("weather__get_forecast"); got.Description != changed.Description {
		t.Errorf("changed tool not updated: %q", got.Description)
	}
	// The replaced and removed documents left the lexical index entirely:
	// it scores as an index built from the tools it now holds.
	fresh := newTestIndex(t, newWordEmbedder(64), nil, slices.Collect(ix.All())...)
	for _, q := range []string{"weather forecast city days", "create issue repository", "ten day"} {
		got, want := ix.SearchLexical(q, 10, nil), fresh.SearchLexical(q, 10, nil)
		if len(got) != len(want) {
			t.Fatalf("lexical %q after Apply = %v, fresh index %v", q, names(got), names(want))
		}
		for i := range got {
			if got[i].Tool.Name != want[i].Tool.Name || math.Abs(got[i].Score-want[i].Score) > 1e-12 {
				t.Errorf("lexical %q after Apply = %v (%v), fresh index %v (%v)", q, names(got), got[i].Score, names(want), want[i].Score)
			}
		}
	}

	// A failed Apply changes nothing, removals included.
	failing := newTestIndex(t, badEmbedder{err: errors.New("down")}, nil)
	if err := failing.Apply(ctx, tool.Change{Server: "s", Added: []tool.Tool{{Name: "a"}}}); err == nil || !strings.Contains(err.Error(), `"s"`) {
		t.Errorf("Apply with failing embedder: error %v, want one naming the server", err)
	}
	if err := ix.Apply(ctx, tool.Change{}); err != nil {
		t.Errorf("empty Apply: %v", err)
	}
}

func TestSearchVector(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(128)
	ix := newTestIndex(t, emb, nil, testTools...)
	query := wordVector("github repository pull requests", 128)

	tests := []struct {
		name   string
		k      int
		filter func(tool.Tool) bool
		want   []string
	}{
		{"top 2", 2, nil, []string{"github__list_pull_requests", "github__create_issue"}},
		{"k clamped to size", 100, nil, nil}, // checked by length below
		{"filter", 2, func(t tool.Tool) bool { return t.Server == "weather" }, nil},
		{"filter rejects all", 3, func(tool.Tool) bool { return false }, []string{}},
		{"k zero", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := ix.SearchVector(ctx, query, tt.k, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Score > hits[i-1].Score {
					t.Errorf("hits not sorted by score: %v", hits)
				}
			}
			switch tt.name {
			case "k clamped to size":
				if len(hits) != len(testTools) {
					t.Errorf("got %d hits, want all %d", len(hits), len(testTools))
				}
			case "filter":
				if diff := cmp.Diff([]string{"weather__get_alerts", "weather__get_forecast"}, slices.Sorted(slices.Values(names(hits)))); diff != "" {
					t.Errorf("filtered hits (-want +got):\n%s", diff)
				}
			case "k zero":
				if len(hits) != 0 {
					t.Errorf("k=0 gave %v", names(hits))
				}
			default:
				if diff := cmp.Diff(tt.want, names(hits)); diff != "" {
					t.Errorf("hits (-want +got):\n%s", diff)
				}
			}
		})
	}

	// An exact document vector scores 1 (cosine) for its tool.
	hits, err := ix.SearchVector(ctx, wordVector(toolindex.Document(testTools[4]), 128), 1, nil)
	if err != nil || len(hits) != 1 || hits[0].Tool.Name != "fs__read_file" || hits[0].Score < 0.999 {
		t.Errorf("self search = %+v, %v; want fs__read_file with score 1", hits, err)
	}
	if _, err := ix.SearchVector(ctx, make([]float32, 5), 3, nil); !errors.Is(err, toolindex.ErrDimension) {
		t.Errorf("wrong query dimension: error = %v, want ErrDimension", err)
	}
	if hits, err := ix.SearchVector(ctx, make([]float32, 128), 3, nil); err != nil || len(hits) != 0 {
		t.Errorf("zero query = %v, %v; want no hits", hits, err)
	}
	empty := newTestIndex(t, emb, nil)
	if hits, err := empty.SearchVector(ctx, query, 3, nil); err != nil || len(hits) != 0 {
		t.Errorf("empty index = %v, %v; want no hits", hits, err)
	}
}

func TestSearchVectorFilterWidens(t *testing.T) {
	// 200 tools, only the last-ranked ones pass the filter: the search must
	// look beyond its first window.
	var tools []tool.Tool
	for i := range 200 {
		tools = append(tools, tool.Tool{Name: fmt.Sprintf("tool%03d", i), Description: strings.Repeat("alpha ", 200-i) + fmt.Sprintf("beta w%d", i)})
	}
	ix := newTestIndex(t, newWordEmbedder(64), nil, tools...)
	keep := func(t tool.Tool) bool { return t.Name >= "tool195" }
	hits, err := ix.SearchVector(context.Background(), wordVector("alpha", 64), 3, keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 {
		t.Fatalf("got %v, want 3 hits among tool195..tool199", names(hits))
	}
	for _, h := range hits {
		if !keep(h.Tool) {
			t.Errorf("hit %s does not pass the filter", h.Tool.Name)
		}
	}
}

func TestSearchLexical(t *testing.T) {
	ix := newTestIndex(t, newWordEmbedder(16), nil, testTools...)
	tests := []struct {
		name   string
		query  string
		k      int
		filter func(tool.Tool) bool
		want   []string
	}{
		{"name beats description", "weather alerts", 3, nil, []string{"weather__get_alerts", "weather__get_forecast"}},
		{"camel case and stemming", "createIssues", 3, nil, []string{"github__create_issue"}},
		{"params field", "path", 3, nil, []string{"fs__read_file"}},
		{"enum values", "closed", 3, nil, []string{"github__list_pull_requests"}},
		// "GitHub" analyses to "git hub", so create_issue's description is
		// longer and scores lower.
		{"k limits", "repository", 1, nil, []string{"github__list_pull_requests"}},
		{"filter", "repository", 5, func(t tool.Tool) bool { return t.Name != "github__list_pull_requests" }, []string{"github__create_issue"}},
		{"no known term", "zebra", 3, nil, nil},
		{"stopwords only", "the of and", 3, nil, nil},
		{"k zero", "weather", 0, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := names(ix.SearchLexical(tt.query, tt.k, tt.filter))
			if diff := cmp.Diff(tt.want, got, cmpEmptyNil); diff != "" {
				t.Errorf("SearchLexical(%q) (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

var cmpEmptyNil = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

// TestSearchLexicalScore checks BM25F against a score computed by hand.
func TestSearchLexicalScore(t *testing.T) {
	// Two tools, no schema, no server. Fields after analysis:
	//   alpha: name [alpha], description [red, blue]
	//   beta:  name [beta],  description [blue, blue, green, green]
	// Query "red": df=1, N=2, idf = ln(1 + 1.5/1.5) = ln 2.
	// alpha: avg description length 3, len 2:
	//   norm = 1 - 0.75 + 0.75*2/3 = 0.75; tf~ = 1*1/0.75 = 4/3
	//   score = ln2 * tf~*(k1+1)/(k1+tf~) = ln2 * (4/3*2.2)/(1.2+4/3)
	ix := newTestIndex(t, newWordEmbedder(8), nil,
		tool.Tool{Name: "alpha", Description: "red blue"},
		tool.Tool{Name: "beta", Description: "blue blue green green"},
	)
	hits := ix.SearchLexical("red", 5, nil)
	tf := 4.0 / 3
	want := 0.6931471805599453 * tf * 2.2 / (1.2 + tf)
	if len(hits) != 1 || hits[0].Tool.Name != "alpha" || fmt.Sprintf("%.9f", hits[0].Score) != fmt.Sprintf("%.9f", want) {
		t.Errorf("SearchLexical(red) = %+v, want alpha with %.9f", hits, want)
	}
	// Name weight 2: "alpha" in the name, length 1 = average 1, norm 1,
	// tf~ = 2.
	hits = ix.SearchLexical("alpha", 5, nil)
	want = 0.6931471805599453 * 2 * 2.2 / (1.2 + 2)
	if len(hits) != 1 || fmt.Sprintf("%.9f", hits[0].Score) != fmt.Sprintf("%.9f", want) {
		t.Errorf("SearchLexical(alpha) = %+v, want score %.9f", hits, want)
	}
}

// TestConcurrentSearchDuringUpsert runs searches while an Upsert is stuck
// in its embedding call (they must not wait for it) and while many updates
// run; -race checks the locking.
func TestConcurrentSearchDuringUpsert(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(32)
	ix := newTestIndex(t, emb, &toolindex.Options{BatchSize: 2}, testTools...)
	query := wordVector("weather forecast", 32)

	// (The index's own Upsert of testTools called Embed already.)
	before, _ := emb.stats()
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		emb.mu.Lock()
		emb.gate = gate
		emb.mu.Unlock()
		done := make(chan error)
		go func() {
			_, err := ix.Upsert(ctx, tool.Tool{Name: "late", Description: "weather forecast late"})
			done <- err
		}()
		// Once the Upsert waits inside Embed (the bubble's goroutines all
		// blocked for good), search: this would deadlock if the embedding
		// ran under the index lock.
		synctest.Wait()
		if calls, _ := emb.stats(); calls != before+1 {
			t.Fatalf("%d Embed calls since the index was built, want 1: the Upsert's", calls-before)
		}
		if hits := ix.SearchLexical("weather", 10, nil); len(hits) != 2 {
			t.Errorf("search during embedding: %v, want the 2 old weather tools", names(hits))
		}
		if _, err := ix.SearchVector(ctx, query, 3, nil); err != nil {
			t.Error(err)
		}
		if _, ok := ix.Get("late"); ok {
			t.Error("tool visible before its embedding finished")
		}
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	if _, ok := ix.Get("late"); !ok {
		t.Error("tool missing after Upsert")
	}
	emb.mu.Lock()
	emb.gate = nil
	emb.mu.Unlock()

	// Readers and writers together.
	var wg sync.WaitGroup
	var stop atomic.Bool
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := ix.SearchVector(ctx, query, 3, func(t tool.Tool) bool { return t.Server != "fs" }); err != nil {
					t.Error(err)
					return
				}
				ix.SearchLexical("weather file issue", 3, nil)
				for range ix.All() {
				}
				ix.Get("weather__get_forecast")
			}
		})
	}
	saveDir := t.TempDir()
	wg.Go(func() {
		for i := 0; i < 5 && (i == 0 || !stop.Load()); i++ {
			if err := ix.Save(saveDir); err != nil {
				t.Error(err)
			}
		}
	})
	for i := range 50 {
		tool := tool.Tool{Name: fmt.Sprintf("gen%d", i%7), Description: fmt.Sprintf("generated weather tool version %d", i)}
		if _, err := ix.Upsert(ctx, tool); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			ix.Remove(fmt.Sprintf("gen%d", (i+2)%7))
		}
	}
	stop.Store(true)
	wg.Wait()
	if _, err := toolindex.Load(ctx, saveDir, emb, nil); err != nil {
		t.Errorf("Load of an index saved during updates: %v", err)
	}
}

// TestNoGoroutineLeak checks that concurrent embedding and vector searches
// leave no goroutine behind, on success and on failure.
func TestNoGoroutineLeak(t *testing.T) {
	// Goroutines that have signalled their WaitGroup may take a moment to
	// exit: CheckGoroutines waits for them, and names any left.
	testenv.CheckGoroutines(t)
	ctx := context.Background()
	ix := newTestIndex(t, newWordEmbedder(32), &toolindex.Options{BatchSize: 1, Concurrency: 4}, testTools...)
	if _, err := ix.SearchVector(ctx, wordVector("weather", 32), 3, func(t tool.Tool) bool { return t.Server == "fs" }); err != nil {
		t.Fatal(err)
	}
	failing := newTestIndex(t, &failNth{n: 2, err: errors.New("boom")}, &toolindex.Options{BatchSize: 1, Concurrency: 4})
	if _, err := failing.Upsert(ctx, testTools...); err == nil {
		t.Fatal("Upsert with a failing embedder succeeded")
	}
}
