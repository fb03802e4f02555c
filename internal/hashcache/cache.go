package hashcache

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/cachefile"
	"github.com/toolsift/toolsift/store"
)

// Cache is the cache of what toolsift derives from tool lists, in a
// store.Store (the Hub's): tool vectors per embedder under
// vectors/<id>.bin and full-tier token costs per tokenizer under
// tokens/<id>.bin, where <id> is a hash of the embedder's or the
// tokenizer's ID (in a store.Dir these keys are the files toolsift has
// always written). It implements toolindex.VectorCache and
// think.CostCache. Nothing in it is secret: keys are content hashes of
// tool documents and tools, values are vectors and counts.
//
// Records are kept in memory until Flush; a value is read on first use. It
// is safe for concurrent use.
type Cache struct {
	st store.Store
	// OnError, when set, is told about a value that could not be read (it
	// is then replaced) or written.
	OnError func(error)

	mu    sync.Mutex
	files map[string]*File
	dims  map[string]int // vector length per embedder, from its first vector
}

// readTimeout bounds the first read of a value.
const readTimeout = time.Minute

// New returns the cache in st.
func New(st store.Store) *Cache {
	return &Cache{st: st, files: map[string]*File{}, dims: map[string]int{}}
}

// file returns the open value of one kind, reading it on first use.
func (c *Cache) file(sub, kind string) *File {
	c.mu.Lock()
	defer c.mu.Unlock()
	full := sub + " " + kind
	if f, ok := c.files[full]; ok {
		return f
	}
	if d, ok := c.st.(*store.Dir); ok {
		// What writers that died between writing and renaming left.
		cachefile.RemoveStaleTemps(filepath.Join(d.Path(), sub))
	}
	h := sha256.Sum256([]byte(full))
	// Read on the lookup that needs it (toolindex.VectorCache and
	// think.CostCache take no context), bounded so that a shared store
	// that hangs costs the cache, not the caller.
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	f, err := Open(ctx, c.st, sub+"/"+hex.EncodeToString(h[:12])+".bin", full, 0)
	if err != nil && c.OnError != nil {
		c.OnError(err)
	}
	c.files[full] = f
	return f
}

// Vector returns the vector cached for a document of embedder.
func (c *Cache) Vector(embedder string, key [32]byte) ([]float32, bool) {
	b, ok := c.file("vectors", embedder).Get(key)
	if !ok || len(b) == 0 || len(b)%4 != 0 {
		return nil, false
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if !c.sameDim(embedder, len(v)) {
		return nil, false
	}
	return v, true
}

// SetVector caches the vector of a document of embedder.
func (c *Cache) SetVector(embedder string, key [32]byte, vec []float32) {
	if len(vec) == 0 || !c.sameDim(embedder, len(vec)) {
		return
	}
	b := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	c.file("vectors", embedder).Put(key, b)
}

// sameDim reports whether n is the vector length of embedder's first
// vector seen (an embedder's vectors all have one length; a record of
// another length is not trusted).
func (c *Cache) sameDim(embedder string, n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.dims[embedder]
	if !ok {
		c.dims[embedder] = n
		return true
	}
	return d == n
}

// Cost returns the full-tier token cost cached for a tool (by content
// hash) under a tokenizer's ID.
func (c *Cache) Cost(tokenizer, hash string) (int, bool) {
	b, ok := c.file("tokens", tokenizer).Get(hashKey(hash))
	if !ok || len(b) != 4 {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(b)), true
}

// SetCost caches a tool's full-tier token cost.
func (c *Cache) SetCost(tokenizer, hash string, tokens int) {
	if tokens < 0 || tokens > math.MaxUint32 {
		return
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(tokens))
	c.file("tokens", tokenizer).Put(hashKey(hash), b[:])
}

// hashKey is the key of a content hash: its bytes when it is 64 hex
// digits (tool.ContentHash), else its SHA-256.
func hashKey(hash string) Key {
	var k Key
	if len(hash) == 2*len(k) {
		if _, err := hex.Decode(k[:], []byte(hash)); err == nil {
			return k
		}
	}
	return sha256.Sum256([]byte(hash))
}

// Flush writes every value with new records. It returns the errors joined
// (also given to OnError).
func (c *Cache) Flush(ctx context.Context) error {
	c.mu.Lock()
	files := make([]*File, 0, len(c.files))
	for _, f := range c.files {
		files = append(files, f)
	}
	c.mu.Unlock()
	var errs []error
	for _, f := range files {
		if err := f.Flush(ctx); err != nil {
			errs = append(errs, err)
			if c.OnError != nil {
				c.OnError(err)
			}
		}
	}
	return errors.Join(errs...)
}
