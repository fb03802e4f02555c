package budget

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// bpe is one encoding's byte-pair encoder. It gives the tokens tiktoken-go's
// EncodeOrdinary gives (the same split pattern and the same merges, checked
// against tiktoken-go by TestBPEMatchesTiktoken and FuzzBPE), in time
// O(n log n) for any text: tiktoken-go's merge loop rescans and shifts the
// whole piece after every merge, O(n²) in a piece's length, so 160 KB of
// letters without a space took a minute and 1 MB about 40 (issue 35).
//
// The split is regexp2 over the text's runes, as tiktoken-go's; its patterns
// match a run of letters, digits, spaces or punctuation in one attempt, so it
// is linear (BenchmarkCountHostile).
type bpe struct {
	ranks   map[string]int
	decoder []string // token → bytes
	split   *regexp2.Regexp
	maxTok  int // the longest token, bytes: a longer pair has no rank
}

// The split patterns of the encodings, as tiktoken-go v0.1.8 has them
// (encoding.go).
const (
	patO200K = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patP50K   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// tables names each encoding's rank file (in tiktoken-go-loader's assets)
// and split pattern.
var tables = map[string]struct{ file, pattern string }{
	EncodingO200K:  {"o200k_base.tiktoken", patO200K},
	EncodingCL100K: {"cl100k_base.tiktoken", patCL100K},
	"p50k_base":    {"p50k_base.tiktoken", patP50K},
	"p50k_edit":    {"p50k_base.tiktoken", patP50K},
	"r50k_base":    {"r50k_base.tiktoken", patP50K},
}

func newBPE(name string) (*bpe, error) {
	t, ok := tables[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownEncoding, name)
	}
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(t.file)
	if err != nil {
		return nil, err
	}
	re, err := regexp2.Compile(t.pattern, regexp2.None)
	if err != nil {
		return nil, err
	}
	b := &bpe{ranks: ranks, split: re}
	top := 0
	for s, r := range ranks {
		top = max(top, r)
		b.maxTok = max(b.maxTok, len(s))
	}
	b.decoder = make([]string, top+1)
	for s, r := range ranks {
		b.decoder[r] = s
	}
	return b, nil
}

// pieces calls yield with each piece of text the split pattern matches, in
// order. Invalid UTF-8 is read as U+FFFD, as tiktoken-go reads it.
func (b *bpe) pieces(text string, yield func(piece string)) {
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	runes := []rune(text)
	// Matches come in order; walk a byte offset along with the rune index so
	// that each piece is a substring of text, not a copy.
	ri, bi := 0, 0
	at := func(r int) int {
		for ri < r {
			bi += utf8.RuneLen(runes[ri])
			ri++
		}
		return bi
	}
	m, _ := b.split.FindRunesMatch(runes)
	for m != nil {
		start := at(m.Index)
		end := at(m.Index + m.Length)
		yield(text[start:end])
		m, _ = b.split.FindNextMatch(m)
	}
}

// encode returns the tokens of text.
func (b *bpe) encode(text string) []int {
	var out []int
	b.pieces(text, func(p string) { out = b.appendPiece(out, p) })
	return out
}

// count returns the number of tokens of text.
func (b *bpe) count(text string) int {
	n := 0
	var scratch []int
	b.pieces(text, func(p string) {
		if _, ok := b.ranks[p]; ok {
			n++
			return
		}
		scratch = b.appendPiece(scratch[:0], p)
		n += len(scratch)
	})
	return n
}

func (b *bpe) decode(tokens []int) string {
	var out []byte
	for _, t := range tokens {
		if t >= 0 && t < len(b.decoder) {
			out = append(out, b.decoder[t]...)
		}
	}
	return string(out)
}

// rank is the rank of p, or noRank.
func (b *bpe) rank(p string) int {
	if len(p) > b.maxTok {
		return noRank
	}
	if r, ok := b.ranks[p]; ok {
		return r
	}
	return noRank
}

const noRank = math.MaxInt32

// smallPiece is the length up to which a piece is merged by tiktoken's own
// loop (quadratic, but without allocations); a var so that a test can send
// every piece through mergeHeap.
var smallPiece = maxSmallPiece

const maxSmallPiece = 64

// appendPiece appends the tokens of one piece.
func (b *bpe) appendPiece(out []int, p string) []int {
	if r, ok := b.ranks[p]; ok {
		return append(out, r)
	}
	if len(p) <= smallPiece {
		return b.mergeSmall(out, p)
	}
	return b.mergeHeap(out, p)
}

// mergeSmall is tiktoken-go's bytePairMerge: repeatedly merge the adjacent
// pair of lowest rank, the leftmost of equal ranks.
func (b *bpe) mergeSmall(out []int, p string) []int {
	type part struct{ start, rank int }
	var buf [maxSmallPiece + 1]part
	parts := buf[:len(p)+1]
	for i := range parts {
		parts[i] = part{i, noRank}
	}
	pairRank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			return b.rank(p[parts[i].start:parts[i+skip+2].start])
		}
		return noRank
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = pairRank(i, 0)
	}
	for len(parts) > 1 {
		minRank, i := noRank, -1
		for j := 0; j < len(parts)-1; j++ {
			if parts[j].rank < minRank {
				minRank, i = parts[j].rank, j
			}
		}
		if i < 0 {
			break
		}
		parts[i].rank = pairRank(i, 1)
		if i > 0 {
			parts[i-1].rank = pairRank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	for i := 0; i+1 < len(parts); i++ {
		out = append(out, b.ranks[p[parts[i].start:parts[i+1].start]])
	}
	return out
}

// mergeHeap makes the same merges as mergeSmall in O(n log n): the parts
// are a linked list over the piece's bytes (a part is named by its first
// byte) and the pairs wait in a heap ordered by rank, then by position, so
// the heap's top is always the pair mergeSmall's scan would find — the one
// of lowest rank, the leftmost of equal ranks (equal ranks are the same
// bytes, at different places). After a merge only the merged part's pair
// and its left neighbour's change, as in mergeSmall. 20 bytes per byte of
// the piece.
func (b *bpe) mergeHeap(out []int, p string) []int {
	n := int32(len(p))
	next := make([]int32, n) // the next part's first byte (n: noRank)
	prev := make([]int32, n) // the previous part's (-1: noRank)
	rank := make([]int32, n) // rank of the pair that starts here
	heap := make([]int32, 0, n)
	pos := make([]int32, n) // index in heap (-1: not there)
	less := func(a, c int32) bool {
		return rank[a] < rank[c] || rank[a] == rank[c] && a < c
	}
	swap := func(i, j int) {
		heap[i], heap[j] = heap[j], heap[i]
		pos[heap[i]], pos[heap[j]] = int32(i), int32(j)
	}
	up := func(i int) {
		for i > 0 {
			parent := (i - 1) / 2
			if !less(heap[i], heap[parent]) {
				return
			}
			swap(i, parent)
			i = parent
		}
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(heap) {
				return
			}
			m := l
			if r := l + 1; r < len(heap) && less(heap[r], heap[l]) {
				m = r
			}
			if !less(heap[m], heap[i]) {
				return
			}
			swap(i, m)
			i = m
		}
	}
	remove := func(a int32) {
		i := int(pos[a])
		if i < 0 {
			return
		}
		last := len(heap) - 1
		if i != last {
			swap(i, last)
		}
		heap = heap[:last]
		pos[a] = -1
		if i != last {
			down(i)
			up(i)
		}
	}
	// set gives a's pair its rank: in the heap when it has one.
	set := func(a int32) {
		r := int32(noRank)
		if c := next[a]; c < n {
			end := n
			if next[c] < n {
				end = next[c]
			}
			r = int32(b.rank(p[a:end]))
		}
		if r == noRank {
			remove(a)
			rank[a] = r
			return
		}
		old := rank[a]
		rank[a] = r
		if i := pos[a]; i < 0 {
			heap = append(heap, a)
			pos[a] = int32(len(heap) - 1)
			up(len(heap) - 1)
		} else if r < old {
			up(int(i))
		} else {
			down(int(i))
		}
	}
	for i := range n {
		next[i], prev[i], pos[i], rank[i] = i+1, i-1, -1, noRank
	}
	for i := range n {
		set(i)
	}
	for len(heap) > 0 {
		a := heap[0]
		c := next[a] // absorbed into a
		remove(c)
		next[a] = next[c]
		if next[c] < n {
			prev[next[c]] = a
		}
		set(a)
		if q := prev[a]; q >= 0 {
			set(q)
		}
	}
	for a := int32(0); a < n; a = next[a] {
		out = append(out, b.ranks[p[a:next[a]]])
	}
	return out
}
