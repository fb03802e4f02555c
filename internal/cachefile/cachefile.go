// Package cachefile keeps keyed records in files that several processes
// share: what toolsift derives from tool lists (token counts, tool vectors)
// and caches beside them, keyed by content hashes so that a record can
// never be wrong for its key, only missing.
//
// A file is read whole when opened and written whole, atomically (a
// temporary file in the same folder, synced, then renamed), so a reader in
// any process sees one complete version. A writer first merges what other
// processes wrote since it read the file, so that two processes sharing the
// folder lose nothing but, at worst, the records of the one that wrote
// first in a race; a lost record is computed again. A file that is
// truncated, corrupt or of another kind is ignored and replaced.
package cachefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Key identifies a record: a SHA-256 of what the record is derived from.
type Key [32]byte

// magic starts every file; the version is its last byte.
const magic = "TSCACHE1"

// DefaultMaxBytes bounds a file's records (keys and values) unless [Open] is
// told otherwise.
const DefaultMaxBytes = 256 << 20

// File is one cache file: records of one kind (the kind names what the
// values are, for example the embedder that made the vectors), in memory
// while the File is open. It is safe for concurrent use.
type File struct {
	path     string
	kind     string
	maxBytes int64

	mu    sync.Mutex
	recs  map[Key][]byte
	used  map[Key]bool // read or written by this process
	dirty bool
}

// ErrCorrupt reports a cache file that could not be read back; [Open]
// returns it beside a usable, empty [File].
var ErrCorrupt = errors.New("cachefile: corrupt cache file")

// Open reads the file at path (with [ReadFile]: a FIFO, a device, a file
// over the limit or one another user could have written is refused with
// an error wrapping [ErrUnsafe]), holding records of the given kind, at most
// maxBytes of them (0 means [DefaultMaxBytes]). A file that does not exist
// yet gives an empty [File] and no error. A file that cannot be read, is
// corrupt or holds another kind also gives an empty File (which replaces
// it on the next Flush), with an error that says why: the caller may log
// it, the cache still works.
func Open(path, kind string, maxBytes int64) (*File, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	f := &File{path: path, kind: kind, maxBytes: maxBytes, recs: map[Key][]byte{}, used: map[Key]bool{}}
	recs, err := read(path, kind, maxBytes)
	if err != nil {
		return f, err
	}
	f.recs = recs
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

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

// Flush writes the records to the file when some were put since the last
// Flush: the file on disk is read again and its records that this [File]
// does not have are kept, then records beyond maxBytes are dropped (those
// this process neither read nor wrote first), then the file is replaced
// atomically (mode 0600, folder 0700).
func (f *File) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirty {
		return nil
	}
	if disk, err := read(f.path, f.kind, f.maxBytes); err == nil {
		for k, v := range disk {
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
	if err := WriteAtomic(f.path, b.Bytes()); err != nil {
		return fmt.Errorf("cachefile: write %s: %w", f.path, err)
	}
	f.dirty = false
	return nil
}

// fileBytes is the size limit of a file of at most maxBytes of records:
// the records, their lengths and the header, with room for a kind name.
func fileBytes(maxBytes int64) int64 {
	return maxBytes + maxBytes/4 + 64<<10
}

func writeU32(b *bytes.Buffer, v uint32) {
	var x [4]byte
	binary.LittleEndian.PutUint32(x[:], v)
	b.Write(x[:])
}

// read parses the file at path. A missing file is no records and no error.
func read(path, kind string, maxBytes int64) (map[Key][]byte, error) {
	data, err := ReadFile(path, fileBytes(maxBytes))
	if errors.Is(err, os.ErrNotExist) {
		return map[Key][]byte{}, nil
	}
	if errors.Is(err, ErrUnsafe) {
		return map[Key][]byte{}, err
	}
	if err != nil {
		return map[Key][]byte{}, fmt.Errorf("cachefile: %w", err)
	}
	recs, err := parse(data, kind)
	if err != nil {
		return map[Key][]byte{}, fmt.Errorf("%w %s: %v", ErrCorrupt, path, err)
	}
	return recs, nil
}

// parse reads the records of a file's bytes; the values point into data.
func parse(data []byte, kind string) (map[Key][]byte, error) {
	if len(data) < len(magic)+8+sha256.Size || string(data[:len(magic)]) != magic {
		return nil, errors.New("not a cache file of this version")
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

// WriteAtomic writes data to file (mode 0600, its folder 0700) so that a
// reader, in this process or another, sees the old content or the new,
// never a part: a temporary file in the same folder, synced, then renamed.
func WriteAtomic(file string, data []byte) (err error) {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := CheckDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), file); err != nil {
		return err
	}
	// Make the rename itself durable where folders can be synced.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// StaleTemp is how old a temporary file must be before [RemoveStaleTemps]
// takes it for the leftover of a writer that died between creating and
// renaming it.
const StaleTemp = time.Hour

// RemoveStaleTemps removes what writers that died left in dir.
func RemoveStaleTemps(dir string) {
	temps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	for _, f := range temps {
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > StaleTemp {
			_ = os.Remove(f)
		}
	}
}
