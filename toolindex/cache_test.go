package toolindex_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/toolsift/toolsift/tool"

	"github.com/toolsift/toolsift/toolindex"
)

// mapCache is a VectorCache in memory that records its traffic.
type mapCache struct {
	mu        sync.Mutex
	vecs      map[string][]float32
	gets, put int
}

func (c *mapCache) k(embedder string, key [32]byte) string { return embedder + string(key[:]) }

func (c *mapCache) Vector(embedder string, key [32]byte) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gets++
	v, ok := c.vecs[c.k(embedder, key)]
	return v, ok
}

func (c *mapCache) SetVector(embedder string, key [32]byte, vec []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put++
	c.vecs[c.k(embedder, key)] = slices.Clone(vec)
}

// TestUpsertVectorCache: an Index built again over the same tools with the
// same cache embeds one document (its dimension), no more, and ranks exactly as the first; a changed tool
// is embedded; another embedder's vectors are never used.
func TestUpsertVectorCache(t *testing.T) {
	ctx := context.Background()
	cache := &mapCache{vecs: map[string][]float32{}}
	emb := newWordEmbedder(64)
	first := newTestIndex(t, emb, &toolindex.Options{Cache: cache}, testTools...)
	if calls, texts := emb.stats(); calls == 0 || len(texts) != len(testTools) {
		t.Fatalf("first index embedded %d texts in %d calls", len(texts), calls)
	}
	if cache.put != len(testTools) {
		t.Fatalf("%d vectors cached, want %d", cache.put, len(testTools))
	}

	emb.reset()
	second, err := toolindex.New(emb, &toolindex.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	st, err := second.Upsert(ctx, testTools...)
	if err != nil {
		t.Fatal(err)
	}
	// One document is embedded to learn the embedder's dimension (so a
	// wrong cache cannot set it), the rest come from the cache.
	if calls, _ := emb.stats(); calls != 1 || st.Embedded != 1 || st.Cached != len(testTools)-1 {
		t.Fatalf("second index: %d Embed calls, stats %+v; want one probe, the rest from the cache", calls, st)
	}
	q := wordVector("weather forecast for a city", 64)
	h1, _ := first.SearchVector(ctx, q, 6, nil)
	h2, _ := second.SearchVector(ctx, q, 6, nil)
	if !slices.Equal(names(h1), names(h2)) || h1[0].Score != h2[0].Score {
		t.Fatalf("rankings differ: %v %v vs %v %v", names(h1), h1[0].Score, names(h2), h2[0].Score)
	}

	// A changed description is a new document: embedded, then cached.
	changed := testTools[0]
	changed.Description = "Seven-day forecast of rain and sun."
	changed.Hash = ""
	st, err = second.Upsert(ctx, changed)
	if err != nil || st.Embedded != 1 || st.Cached != 0 {
		t.Fatalf("changed tool: %+v, %v; want 1 embedded", st, err)
	}

	// Another embedder (another ID) does not see these vectors.
	other := newWordEmbedder(32)
	third := newTestIndex(t, other, &toolindex.Options{Cache: cache}, testTools...)
	if _, texts := other.stats(); len(texts) != len(testTools) || third.Dimension() != 32 {
		t.Fatalf("another embedder embedded %d texts (dim %d); want all, 32", len(texts), third.Dimension())
	}
}

// wrongDimCache returns vectors of the wrong length for every document.
type wrongDimCache struct{ mapCache }

func (c *wrongDimCache) Vector(string, [32]byte) ([]float32, bool) { return []float32{1, 0, 0}, true }

// TestUpsertVectorCacheWrongLength: vectors of the wrong length from a
// cache never reach the index, whether its dimension is known already or
// set by this Upsert.
func TestUpsertVectorCacheWrongLength(t *testing.T) {
	ctx := context.Background()
	emb := newWordEmbedder(64)
	ix, err := toolindex.New(emb, &toolindex.Options{Cache: &wrongDimCache{mapCache{vecs: map[string][]float32{}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, batch := range [][]tool.Tool{testTools[:3], testTools[3:]} {
		st, err := ix.Upsert(ctx, batch...)
		if err != nil {
			t.Fatal(err)
		}
		if st.Cached != 0 || st.Embedded != len(batch) || ix.Dimension() != 64 {
			t.Fatalf("stats %+v, dimension %d; want every tool embedded at 64", st, ix.Dimension())
		}
	}
}
