package encoder

import (
	"slices"
	"strings"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

// usePieces is the SentencePiece unigram vocabulary of Universal Sentence
// Encoder Lite and its tokenizer, a port of the reference tokenizer of
// @energetic-ai/embeddings 0.2.0 that gives the same piece ids, including
// its quirks (see encode).
type usePieces struct {
	// A byte trie of the pieces (the reserved ones left out): the edges
	// out of node n are edgeByte[edgeStart[n]:edgeStart[n+1]] (ascending)
	// to the nodes edgeNode[…] (the root's also in root, by byte, -1 for
	// none); term[node] is the id of the piece ending there or -1. Node 0
	// is the root.
	root      [256]int32
	edgeStart []int32
	edgeByte  []byte
	edgeNode  []int32
	term      []int32
	score     []float64 // log-probability of each id
	jsLen     []int     // length of each piece in UTF-16 code units
}

// next returns the node that byte c leads to from node, or -1.
func (p *usePieces) next(node int32, c byte) int32 {
	if node == 0 {
		return p.root[c]
	}
	lo, hi := p.edgeStart[node], p.edgeStart[node+1]
	for i := lo; i < hi; i++ {
		switch b := p.edgeByte[i]; {
		case b == c:
			return p.edgeNode[i]
		case b > c:
			return -1
		}
	}
	return -1
}

// useReserved is the number of control pieces at the start of the
// vocabulary ("<unk>" as U+FFFD, "<s>", "</s>", three extra ids) that never
// match text.
const useReserved = 6

// useUnknown is the id of the unknown piece.
const useUnknown = 0

func newUSEPieces(pieces []string, scores []float64) *usePieces {
	child := map[uint64]int32{} // node<<8|byte → node, while building
	p := &usePieces{term: []int32{-1}, score: scores, jsLen: make([]int, len(pieces))}
	for i, s := range pieces {
		for _, r := range s {
			p.jsLen[i] += utf16.RuneLen(r)
		}
		if i < useReserved {
			continue
		}
		node := int32(0)
		for j := 0; j < len(s); j++ {
			k := uint64(node)<<8 | uint64(s[j])
			c, ok := child[k]
			if !ok {
				c = int32(len(p.term))
				p.term = append(p.term, -1)
				child[k] = c
			}
			node = c
		}
		p.term[node] = int32(i) // a later duplicate wins, as in the reference trie
	}
	// The edges, by node then byte.
	keys := make([]uint64, 0, len(child))
	for k := range child {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i := range p.root {
		p.root[i] = -1
	}
	p.edgeStart = make([]int32, len(p.term)+1)
	p.edgeByte = make([]byte, len(keys))
	p.edgeNode = make([]int32, len(keys))
	for i, k := range keys {
		from, c := k>>8, byte(k)
		if from == 0 {
			p.root[c] = child[k]
		}
		p.edgeStart[from+1]++
		p.edgeByte[i], p.edgeNode[i] = c, child[k]
	}
	for n := 1; n < len(p.edgeStart); n++ {
		p.edgeStart[n] += p.edgeStart[n-1]
	}
	return p
}

// encode returns the piece ids of text. Like the reference it normalises
// text to NFKC, keeps its case, replaces each ASCII space by "▁" and puts
// one "▁" in front, then finds the segmentation with the best sum of
// log-probabilities (Viterbi), a character that starts no piece becoming
// the unknown piece, and merges runs of unknown pieces into one. Ties and
// the reference's use of 0 as "no score yet" are kept, so the ids are the
// reference's even where the search is not exactly a maximum.
func (p *usePieces) encode(text string) []int32 {
	s := norm.NFKC.String(text)
	if s == "" {
		return nil
	}
	s = "▁" + strings.ReplaceAll(s, " ", "▁")
	offs := make([]int, 0, len(s)+1) // byte offset of each rune, and the end
	for i := range s {
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	n := len(offs) - 1

	// Every piece found in the text, by ascending start; a rune that
	// starts no piece is an unknown piece of score 0.
	type match struct {
		start, end int
		id         int32
	}
	var found []match
	for i := range n {
		hit := false
		node, l := int32(0), 1
		for pos := offs[i]; pos < len(s); {
			c := p.next(node, s[pos])
			if c < 0 {
				break
			}
			node = c
			pos++
			if pos == offs[i+l] { // a whole number of runes
				if id := p.term[node]; id >= 0 {
					found = append(found, match{i, i + l, id})
					hit = true
				}
				l++
			}
		}
		if !hit {
			found = append(found, match{i, i + 1, useUnknown})
		}
	}
	// The same grouped by end, by ascending start within an end (the
	// reference's order), with a counting sort.
	first := make([]int, n+2)
	for _, m := range found {
		first[m.end+1]++
	}
	for e := 1; e < len(first); e++ {
		first[e] += first[e-1]
	}
	byEnd := make([]match, len(found))
	next := first[: n+1 : n+1]
	for _, m := range found {
		byEnd[next[m.end]] = m
		next[m.end]++
	}
	best := make([]float64, n+1)
	words := make([]int32, n+1)
	for _, m := range byEnd {
		sc := 0.0
		if m.id != useUnknown {
			sc = p.score[m.id]
		}
		if v := sc + best[m.start]; best[m.end] == 0 || v >= best[m.end] {
			best[m.end] = v
			words[m.end] = m.id
		}
	}
	var rev []int32
	for i := n; i > 0; i -= p.jsLen[words[i]] {
		rev = append(rev, words[i])
	}
	out := make([]int32, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		// The reference merges over the reversed list: an unknown piece
		// goes when the one before it there was unknown too.
		if rev[i] == useUnknown && i > 0 && rev[i-1] == useUnknown {
			continue
		}
		out = append(out, rev[i])
	}
	return out
}
