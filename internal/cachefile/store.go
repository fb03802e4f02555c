package cachefile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"path/filepath"
	"sync"
)

// Store is the cache of what toolsift derives from tool lists, in a
// folder (the Hub's cache folder): tool vectors per embedder in
// vectors/<id>.bin and full-tier token costs per tokenizer in
// tokens/<id>.bin, where <id> is a hash of the embedder's or the
// tokenizer's ID. It implements toolindex.VectorCache and
// think.CostCache. Nothing in it is secret: keys are content hashes of
// tool documents and tools, values are vectors and counts.
//
// Records are kept in memory until Flush; a file is read on first use. It
// is safe for concurrent use.
type Store struct {
	dir string
	// OnError, when set, is told about a cache file that could not be
	// read (it is then replaced) or written.
	OnError func(error)

	mu    sync.Mutex
	files map[string]*File
	dims  map[string]int // vector length per embedder, from its first vector
}

// NewStore returns the store in dir (created on the first Flush).
func NewStore(dir string) *Store {
	return &Store{dir: dir, files: map[string]*File{}, dims: map[string]int{}}
}

// Dir returns the store's folder.
func (s *Store) Dir() string { return s.dir }

// file returns the open file of one kind, reading it on first use.
func (s *Store) file(sub, kind string) *File {
	s.mu.Lock()
	defer s.mu.Unlock()
	full := sub + " " + kind
	if f, ok := s.files[full]; ok {
		return f
	}
	h := sha256.Sum256([]byte(full))
	dir := filepath.Join(s.dir, sub)
	RemoveStaleTemps(dir)
	f, err := Open(filepath.Join(dir, hex.EncodeToString(h[:12])+".bin"), full, 0)
	if err != nil && s.OnError != nil {
		s.OnError(err)
	}
	s.files[full] = f
	return f
}

// Vector returns the vector cached for a document of embedder.
func (s *Store) Vector(embedder string, key [32]byte) ([]float32, bool) {
	b, ok := s.file("vectors", embedder).Get(key)
	if !ok || len(b) == 0 || len(b)%4 != 0 {
		return nil, false
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	if !s.sameDim(embedder, len(v)) {
		return nil, false
	}
	return v, true
}

// SetVector caches the vector of a document of embedder.
func (s *Store) SetVector(embedder string, key [32]byte, vec []float32) {
	if len(vec) == 0 || !s.sameDim(embedder, len(vec)) {
		return
	}
	b := make([]byte, 4*len(vec))
	for i, x := range vec {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	s.file("vectors", embedder).Put(key, b)
}

// sameDim reports whether n is the vector length of embedder's first
// vector seen (an embedder's vectors all have one length; a record of
// another length is not trusted).
func (s *Store) sameDim(embedder string, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.dims[embedder]
	if !ok {
		s.dims[embedder] = n
		return true
	}
	return d == n
}

// Cost returns the full-tier token cost cached for a tool (by content
// hash) under a tokenizer's ID.
func (s *Store) Cost(tokenizer, hash string) (int, bool) {
	b, ok := s.file("tokens", tokenizer).Get(hashKey(hash))
	if !ok || len(b) != 4 {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(b)), true
}

// SetCost caches a tool's full-tier token cost.
func (s *Store) SetCost(tokenizer, hash string, tokens int) {
	if tokens < 0 || tokens > math.MaxUint32 {
		return
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(tokens))
	s.file("tokens", tokenizer).Put(hashKey(hash), b[:])
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

// Flush writes every file with new records. It returns the errors joined
// (also given to OnError).
func (s *Store) Flush() error {
	s.mu.Lock()
	files := make([]*File, 0, len(s.files))
	for _, f := range s.files {
		files = append(files, f)
	}
	s.mu.Unlock()
	var errs []error
	for _, f := range files {
		if err := f.Flush(); err != nil {
			errs = append(errs, err)
			if s.OnError != nil {
				s.OnError(err)
			}
		}
	}
	return errors.Join(errs...)
}
