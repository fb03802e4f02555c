package retrieval

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// countingEmbedder gives each text a vector of dims values (its length,
// then zeros) and counts the texts it embeds.
type countingEmbedder struct {
	dims     int
	embedded []string
}

func (e *countingEmbedder) ID() string { return "counting" }

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = make([]float32, e.dims)
		out[i][0] = float32(len(t))
		e.embedded = append(e.embedded, t)
	}
	return out, nil
}

func TestQueryCacheLRUWithinBytes(t *testing.T) {
	emb := &countingEmbedder{dims: 512}
	var c queryCache
	ctx := context.Background()
	get := func(text string) {
		t.Helper()
		v, err := c.embed(ctx, emb, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if v[0][0] != float32(len(text)) {
			t.Fatalf("%q: vector %v…, want its own", text, v[0][:1])
		}
	}
	per := (&queryEntry{queryKey{"counting", "query 000"}, make([]float32, 512)}).size()
	fit := maxCachedQueryBytes / per
	for i := range fit {
		get(fmt.Sprintf("query %03d", i))
	}
	get("query 000") // the oldest, used again: now the most recent
	if n := len(emb.embedded); n != fit {
		t.Fatalf("embedded %d texts for %d distinct ones that fit", n, fit)
	}
	get("one more") // evicts the least recent: query 001, not query 000
	if c.bytes > maxCachedQueryBytes {
		t.Errorf("cache holds %d bytes, bound %d", c.bytes, maxCachedQueryBytes)
	}
	before := len(emb.embedded)
	get("query 000")
	get("query 002")
	if got := emb.embedded[before:]; len(got) != 0 {
		t.Errorf("embedded again %q, want them from the cache", got)
	}
	get("query 001")
	if got := emb.embedded[before:]; len(got) != 1 || got[0] != "query 001" {
		t.Errorf("embedded %q after the eviction, want [query 001] (the least recently used)", got)
	}
	// A text whose entry alone exceeds the bound is not kept, and evicts
	// nothing.
	n := len(c.vecs)
	huge := strings.Repeat("x", maxCachedQueryBytes)
	get(huge)
	get(huge)
	if got := emb.embedded[len(emb.embedded)-2:]; got[0] != huge || got[1] != huge {
		t.Error("a text larger than the cache was not embedded each time")
	}
	if len(c.vecs) != n {
		t.Errorf("cache holds %d entries after a huge text, want %d", len(c.vecs), n)
	}
}
