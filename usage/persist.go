package usage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"math"
	"slices"
	"time"
)

// ErrFormat reports data that Merge cannot read: not a scope as Marshal
// writes it, of another version, or damaged.
var ErrFormat = errors.New("usage: bad format")

// Entry is one call a scope holds, as Entries reports it.
type Entry struct {
	// Identity called Tool (at the version of content hash Hash) Count
	// times after the same request, first at First and last at Last.
	Identity, Tool, Hash string
	Count                int
	First, Last          time.Time
	// Text is the request's text, kept only with Options.KeepText.
	Text string
}

// Entries returns the calls scope holds, in a fixed order (by request,
// then identity, tool and hash). The Memory must not be changed while the
// sequence is walked.
func (m *Memory) Entries(scope string) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		m.mu.RLock()
		defer m.mu.RUnlock()
		s := m.scopes[scope]
		if s == nil {
			return
		}
		for _, r := range s.sorted() {
			for _, c := range r.calls {
				if !yield(c.entry(r)) {
					return
				}
			}
		}
	}
}

func (c call) entry(r *request) Entry {
	return Entry{Identity: c.identity, Tool: c.tool, Hash: c.hash, Count: c.count,
		First: time.Unix(0, c.first).UTC(), Last: time.Unix(0, c.last).UTC(), Text: r.text}
}

// Forget drops the calls of scope that match accepts (nil: every call),
// and the requests left without a call, and returns how many calls it
// dropped: what a person asks to forget (an identity's, a tool's, the
// calls older than a date) is gone from the votes at once.
func (m *Memory) Forget(scope string, match func(Entry) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scopes[scope]
	if s == nil {
		return 0
	}
	n := 0
	for _, r := range s.sorted() {
		for i := len(r.calls) - 1; i >= 0; i-- {
			if match == nil || match(r.calls[i].entry(r)) {
				s.remove(r, i)
				n++
			}
		}
	}
	if s.calls == 0 {
		delete(m.scopes, scope)
	}
	return n
}

// sorted returns a copy of the scope's requests, by key.
func (s *scope) sorted() []*request { return slices.Clone(s.list) }

// formatMagic starts what Marshal writes; its last byte is the version.
const formatMagic = "TSUSAGE1"

// Marshal returns what scope holds, for a store.Store (one value per
// scope) or another Memory's Merge: requests as their int8 vectors and
// hashed terms (and texts, if kept), and their calls. The same scope gives
// the same bytes. A scope that holds nothing gives a valid empty value.
func (m *Memory) Marshal(scope string) []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b := []byte(formatMagic)
	s := m.scopes[scope]
	if s == nil {
		s = newScope()
	}
	b = binary.AppendVarint(b, s.newest)
	reqs := s.sorted()
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for _, r := range reqs {
		b = binary.AppendUvarint(b, uint64(len(r.vec)))
		for _, x := range r.vec {
			b = append(b, byte(x))
		}
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.scale))
		b = binary.AppendUvarint(b, uint64(len(r.terms)))
		for _, t := range r.terms {
			b = binary.LittleEndian.AppendUint32(b, t)
		}
		b = appendString(b, r.text)
		b = binary.AppendUvarint(b, uint64(len(r.calls)))
		for _, c := range r.calls {
			b = appendString(b, c.identity)
			b = appendString(b, c.tool)
			b = appendString(b, c.hash)
			b = binary.AppendUvarint(b, uint64(c.count))
			b = binary.AppendVarint(b, c.first)
			b = binary.AppendVarint(b, c.last)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Merge adds what data (a scope as Marshal wrote it, in this process or
// another: a replica's) holds to scope: a call both hold keeps the larger
// count and the wider times, so that merging the same data again changes
// nothing, and merging states in any order gives the same scope while it
// is within the bounds; then the scope is bounded (Options). Texts are
// kept only with Options.KeepText. Data that is not such a value is an
// error wrapping ErrFormat, and changes nothing.
func (m *Memory) Merge(scope string, data []byte) error {
	reqs, newest, err := decode(data, m.opts.KeepText)
	if err != nil {
		return fmt.Errorf("usage: merge scope %q: %w", scope, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.scope(scope)
	s.newest = max(s.newest, newest)
	for _, r := range reqs {
		calls := r.calls
		for _, c := range calls {
			s.mergeCall(r, c)
		}
	}
	s.bound(m.opts)
	if s.calls == 0 {
		delete(m.scopes, scope)
	}
	return nil
}

// Replace sets scope to what data (a scope as Marshal wrote it) holds,
// dropping every call it held before, then bounds it (Options): a process
// that keeps its memory in a store takes the store's value as the truth
// (a call forgotten there is forgotten here too) and records again the
// calls it has not written yet. Empty data empties the scope. Data that is
// not such a value is an error wrapping ErrFormat, and changes nothing.
func (m *Memory) Replace(scope string, data []byte) error {
	var reqs []*request
	var newest int64
	if len(data) > 0 {
		var err error
		if reqs, newest, err = decode(data, m.opts.KeepText); err != nil {
			return fmt.Errorf("usage: replace scope %q: %w", scope, err)
		}
	}
	s := newScope()
	s.newest = newest
	for _, r := range reqs {
		for _, c := range r.calls {
			s.mergeCall(r, c)
		}
	}
	s.bound(m.opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.calls == 0 {
		delete(m.scopes, scope)
	} else {
		m.scopes[scope] = s
	}
	return nil
}

// decode reads what Marshal wrote.
func decode(data []byte, keepText bool) ([]*request, int64, error) {
	if len(data) < len(formatMagic)+4 || string(data[:len(formatMagic)-1]) != formatMagic[:len(formatMagic)-1] {
		return nil, 0, fmt.Errorf("%w: not a usage scope", ErrFormat)
	}
	if data[len(formatMagic)-1] != formatMagic[len(formatMagic)-1] {
		return nil, 0, fmt.Errorf("%w: version %q, want %q", ErrFormat, data[len(formatMagic)-1], formatMagic[len(formatMagic)-1])
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrFormat)
	}
	d := decoder{b: body[len(formatMagic):]}
	newest := d.varint()
	n := d.count(1)
	reqs := make([]*request, 0, n)
	for range n {
		r := &request{}
		r.vec = make([]int8, d.count(1))
		for i := range r.vec {
			r.vec[i] = int8(d.byte())
		}
		r.scale = math.Float32frombits(d.uint32())
		r.terms = make([]uint32, d.count(4))
		for i := range r.terms {
			r.terms[i] = d.uint32()
		}
		if text := d.string(); keepText {
			r.text = text
		}
		nc := d.count(4)
		for range nc {
			c := call{identity: d.string(), tool: d.string(), hash: d.string()}
			c.count = int(d.count(0))
			c.first, c.last = d.varint(), d.varint()
			if d.err == nil && (c.tool == "" || c.count < 1 || c.first > c.last) {
				d.err = errors.New("a call with no tool, no count or its times reversed")
			}
			r.calls = append(r.calls, c)
		}
		if d.err != nil {
			break
		}
		if !slices.IsSorted(r.terms) {
			d.err = errors.New("terms out of order")
			break
		}
		// The key is what the request is, computed again: a value cannot
		// name another request's key.
		r.key = requestKey(r)
		reqs = append(reqs, r)
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the last request", len(d.b))
	}
	if d.err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrFormat, d.err)
	}
	return reqs, newest, nil
}

// decoder reads Marshal's encoding; the first error sticks and every read
// after it returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated at %s", what)
	}
	d.b = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("a number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items of at least size bytes each (0: a number
// of no size), refusing one that the data left could not hold.
func (d *decoder) count(size int) int {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("a count")
		return 0
	}
	d.b = d.b[n:]
	if size > 0 && v > uint64(len(d.b)/size) || size == 0 && v > math.MaxInt32 {
		d.fail("a count larger than the data")
		return 0
	}
	return int(v)
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("a byte")
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *decoder) uint32() uint32 {
	if len(d.b) < 4 {
		d.fail("a number")
		return 0
	}
	x := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return x
}

func (d *decoder) string() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
