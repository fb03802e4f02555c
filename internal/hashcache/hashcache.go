// Package hashcache keeps records keyed by content hashes in the values of
// a store.Store that several processes share: what toolsift derives from
// tool lists (tool vectors per embedder, token costs per tokenizer) and
// caches beside them, keyed by content hashes so that a record can never
// be wrong for its key, only missing.
//
// A value (a [File]) is read whole on first use and written whole with
// one Put, so a reader in any process sees one complete version. A writer
// takes the store's lock named after the value's key, reads the value
// again and merges what other processes wrote since it read it, then puts
// the merged value, so that processes sharing the store lose nothing. A
// value that is truncated, corrupt, of another kind or over the limit is
// ignored and replaced.
package hashcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/toolsift/toolsift/store"
)

// Key identifies a record: a SHA-256 of what the record is derived from.
type Key [32]byte

// magic starts every value; the version is its last byte.
const magic = "TSCACHE1"

// DefaultMaxBytes bounds a value's records (keys and values) unless [Open]
// is told otherwise.
const DefaultMaxBytes = 256 << 20

// File is one value of records of one kind (the kind names what the
// values are, for example the embedder that made the vectors), in memory
// while the File is open. It is safe for concurrent use.
type File struct {
	st       store.Store
	key      string
	kind     string
	maxBytes int64

	mu    sync.Mutex
	recs  map[Key][]byte
	used  map[Key]bool // read or written by this process
	dirty bool
}

// ErrCorrupt reports a value that could not be read back; [Open] returns
// it beside a usable, empty [File].
var ErrCorrupt = errors.New("hashcache: corrupt cache value")

// Open reads the value under key in st, holding records of the given kind,
// at most maxBytes of them (0 means [DefaultMaxBytes]). A missing value
// gives an empty [File] and no error. A value that cannot be read (the
// store refused it: store.Dir refuses a file another user could have
// written), is corrupt, over the limit or holds another kind also gives an
// empty File (which replaces it on the next Flush), with an error that
// names the key and says why: the caller may log it, the cache still works.
func Open(ctx context.Context, st store.Store, key, kind string, maxBytes int64) (*File, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	f := &File{st: st, key: key, kind: kind, maxBytes: maxBytes, recs: map[Key][]byte{}, used: map[Key]bool{}}
	recs, err := f.read(ctx)
	if err != nil {
		return f, err
	}
	f.recs = recs
	return f, nil
}

// Key returns the store key of the File's value.
func (f *File) Key() string { return f.key }

// Len returns the number of records in memory.
func (f *File) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.recs)
}

// Get returns the record stored under k. The slice must not be modified.
func (f *File) Get(k Key) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.recs[k]
	if ok {
		f.used[k] = true
	}
	return v, ok
}

// Put stores v (copied) under k; Flush writes it.
func (f *File) Put(k Key, v []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.recs[k]; ok && bytes.Equal(old, v) {
		f.used[k] = true
		return
	}
	f.recs[k] = slices.Clone(v)
	f.used[k] = true
	f.dirty = true
}

// Dirty reports whether records were put since the last Flush.
func (f *File) Dirty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dirty
}

// Flush writes the records when some were put since the last Flush: under
// the store's lock named after the File's key, the value in the store is
// read again and its records that this [File] does not have are kept, then
// records beyond maxBytes are dropped (those this process neither read nor
// wrote first), then the value is replaced with one Put.
func (f *File) Flush(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirty {
		return nil
	}
	unlock, err := f.st.Lock(ctx, f.key)
	if err != nil {
		return fmt.Errorf("hashcache: write %s: %w", f.key, err)
	}
	defer unlock()
	if stored, err := f.read(ctx); err == nil {
		for k, v := range stored {
			if _, ok := f.recs[k]; !ok {
				f.recs[k] = v
			}
		}
	}
	keys := make([]Key, 0, len(f.recs))
	for k := range f.recs {
		keys = append(keys, k)
	}
	// Records this process used first, then by key: what is dropped at
	// the bound is what another process cached and this one never needed.
	slices.SortFunc(keys, func(a, b Key) int {
		if ua, ub := f.used[a], f.used[b]; ua != ub {
			if ua {
				return -1
			}
			return 1
		}
		return bytes.Compare(a[:], b[:])
	})
	var size int64
	for i, k := range keys {
		size += int64(len(k) + 4 + len(f.recs[k]))
		if size > f.maxBytes {
			for _, d := range keys[i:] {
				delete(f.recs, d)
			}
			keys = keys[:i]
			break
		}
	}
	slices.SortFunc(keys, func(a, b Key) int { return bytes.Compare(a[:], b[:]) })
	var b bytes.Buffer
	b.WriteString(magic)
	writeU32(&b, uint32(len(f.kind)))
	b.WriteString(f.kind)
	writeU32(&b, uint32(len(keys)))
	for _, k := range keys {
		v := f.recs[k]
		b.Write(k[:])
		writeU32(&b, uint32(len(v)))
		b.Write(v)
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	if err := f.st.Put(ctx, f.key, b.Bytes()); err != nil {
		return fmt.Errorf("hashcache: write %s: %w", f.key, err)
	}
	f.dirty = false
	return nil
}

// valueBytes is the size limit of a value of at most maxBytes of records:
// the records, their lengths and the header, with room for a kind name.
func valueBytes(maxBytes int64) int64 {
	return maxBytes + maxBytes/4 + 64<<10
}

func writeU32(b *bytes.Buffer, v uint32) {
	var x [4]byte
	binary.LittleEndian.PutUint32(x[:], v)
	b.Write(x[:])
}

// read parses the value in the store. A missing value is no records and
// no error.
func (f *File) read(ctx context.Context) (map[Key][]byte, error) {
	data, err := store.GetBounded(ctx, f.st, f.key, int(min(valueBytes(f.maxBytes), store.MaxValueBytes)))
	if errors.Is(err, store.ErrNotFound) {
		return map[Key][]byte{}, nil
	}
	if errors.Is(err, store.ErrTooLarge) {
		return map[Key][]byte{}, fmt.Errorf("%w %s: %w", ErrCorrupt, f.key, err)
	}
	if err != nil {
		return map[Key][]byte{}, fmt.Errorf("hashcache: %s: %w", f.key, err)
	}
	recs, err := parse(data, f.kind)
	if err != nil {
		return map[Key][]byte{}, fmt.Errorf("%w %s: %v", ErrCorrupt, f.key, err)
	}
	return recs, nil
}

// parse reads the records of a value; the records point into data.
func parse(data []byte, kind string) (map[Key][]byte, error) {
	if len(data) < len(magic)+8+sha256.Size || string(data[:len(magic)]) != magic {
		return nil, errors.New("not a cache value of this version")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("checksum mismatch")
	}
	p := body[len(magic):]
	u32 := func() (int, bool) {
		if len(p) < 4 {
			return 0, false
		}
		v := binary.LittleEndian.Uint32(p)
		p = p[4:]
		return int(v), true
	}
	n, ok := u32()
	if !ok || n > len(p) {
		return nil, errors.New("truncated header")
	}
	if string(p[:n]) != kind {
		return nil, fmt.Errorf("holds %q, not %q", p[:n], kind)
	}
	p = p[n:]
	count, ok := u32()
	if !ok || count > len(p)/(len(Key{})+4) {
		return nil, errors.New("bad record count")
	}
	recs := make(map[Key][]byte, count)
	for range count {
		if len(p) < len(Key{}) {
			return nil, errors.New("truncated record")
		}
		var k Key
		copy(k[:], p)
		p = p[len(k):]
		n, ok := u32()
		if !ok || n > len(p) {
			return nil, errors.New("truncated record")
		}
		recs[k] = p[:n:n]
		p = p[n:]
	}
	if len(p) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return recs, nil
}
