package retrieval

import (
	clist "container/list"
	"context"
	"fmt"
	"sync"

	"github.com/toolsift/toolsift/toolindex"
)

// maxCachedQueryBytes bounds what the query vectors a Retriever keeps
// take (texts and vectors, about 6 KB a short query with the n-gram and
// USE embedders: some 300 queries): an agent's task is the same text at
// every step of its run, and a thought often repeats; a USE vector of a
// query costs about a millisecond of CPU. A text whose entry alone is
// larger is embedded every time.
const maxCachedQueryBytes = 2 << 20

// queryEmbedder is an embedder with a faster path for query texts, whose
// vectors are compared with the documents' (encoder.USE.EmbedQueries).
type queryEmbedder interface {
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// queryCache keeps the vectors of recent query texts by embedder, so that
// a run embeds its task once: the least recently used are forgotten first,
// within maxCachedQueryBytes. Safe for concurrent use.
type queryCache struct {
	mu    sync.Mutex
	vecs  map[queryKey]*clist.Element // of *queryEntry
	lru   clist.List                  // most recently used first
	bytes int
}

type queryKey struct{ embedder, text string }

type queryEntry struct {
	key queryKey
	vec []float32
}

// size is what an entry takes, its map and list overhead counted.
func (e *queryEntry) size() int {
	return len(e.key.embedder) + len(e.key.text) + 4*len(e.vec) + 160
}

// embed returns emb's vector of each text, from the cache or embedded in
// one call (and then cached). The vectors are shared: read-only.
func (c *queryCache) embed(ctx context.Context, emb toolindex.Embedder, texts []string) ([][]float32, error) {
	id := emb.ID()
	out := make([][]float32, len(texts))
	var missing []string
	var at []int
	c.mu.Lock()
	for i, t := range texts {
		if el, ok := c.vecs[queryKey{id, t}]; ok {
			c.lru.MoveToFront(el)
			out[i] = el.Value.(*queryEntry).vec
			continue
		}
		missing = append(missing, t)
		at = append(at, i)
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	embed := emb.Embed
	if q, ok := emb.(queryEmbedder); ok {
		embed = q.EmbedQueries
	}
	vecs, err := embed(ctx, missing)
	if err != nil {
		return nil, fmt.Errorf("retrieval: embed query with %s: %w", id, err)
	}
	if len(vecs) != len(missing) {
		return nil, fmt.Errorf("retrieval: embed query with %s: %w: %d vectors for %d texts", id, toolindex.ErrDimension, len(vecs), len(missing))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vecs == nil {
		c.vecs = make(map[queryKey]*clist.Element)
	}
	for j, v := range vecs {
		out[at[j]] = v
		c.put(&queryEntry{queryKey{id, missing[j]}, v})
	}
	return out, nil
}

// put keeps e as the most recent entry (replacing one of its key), and
// forgets the least recent beyond maxCachedQueryBytes. c.mu is held.
func (c *queryCache) put(e *queryEntry) {
	if e.size() > maxCachedQueryBytes {
		return
	}
	if el, ok := c.vecs[e.key]; ok { // embedded by two searches at once
		c.bytes -= el.Value.(*queryEntry).size()
		c.lru.Remove(el)
	}
	c.vecs[e.key] = c.lru.PushFront(e)
	c.bytes += e.size()
	for c.bytes > maxCachedQueryBytes {
		last := c.lru.Back()
		old := last.Value.(*queryEntry)
		c.lru.Remove(last)
		delete(c.vecs, old.key)
		c.bytes -= old.size()
	}
}
