package retrieval

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsift/toolsift/internal/textproc"
)

// Word associations (rankopt.Features.Associate, off by default): a request says "look up the
// forecast", the tool says "get weather". A table fitted on public
// requests and their gold tools (benchmarks/fit_test.go,
// TestFitAssociations: Seal-Tools and StableToolBench, three quarters of
// each) says which words of tool documents go with which request words;
// the request is expanded with the tool words its own words call for, as a
// bag of words searched by the word signals (BM25F and the hashed n-grams),
// as pseudo-relevance feedback's expansion is. The table is general: a pair
// is kept only when several different tools and requests show it, never
// one tool's name.

// assocTable is the fitted table, one request term a line:
//
//	term<TAB>word:weight word:weight ...
//
// term is a request word as textproc.Terms gives it (stemmed); each word
// is a tool document's word as it is written (the analysers stem it
// again), its weight the share of the requests with term whose gold tool
// has the word, rounded.
//
//go:embed assoc.tsv
var assocTable string

// Bounds and weight of the expansion.
const (
	assocTerms = 8 // words added to the request
)

type assocWord struct {
	word   string
	stem   string
	weight float64
}

var assocOnce = sync.OnceValues(func() (map[string][]assocWord, error) { return parseAssoc(assocTable) })

// parseAssoc reads the table format above.
func parseAssoc(text string) (map[string][]assocWord, error) {
	out := map[string][]assocWord{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		term, rest, ok := strings.Cut(line, "\t")
		if !ok || term == "" {
			return nil, fmt.Errorf("retrieval: assoc.tsv:%d: want term<TAB>word:weight pairs", i+1)
		}
		for _, f := range strings.Fields(rest) {
			w, ws, ok := strings.Cut(f, ":")
			v, err := strconv.ParseFloat(ws, 64)
			if !ok || w == "" || err != nil || v <= 0 {
				return nil, fmt.Errorf("retrieval: assoc.tsv:%d: bad pair %q", i+1, f)
			}
			out[term] = append(out[term], assocWord{word: w, stem: textproc.Stem(w), weight: v})
		}
	}
	return out, nil
}

// assocPart returns the expansion of ps by the association table as a part
// searched by the word signals only, in a group of its own, weighing w
// times the heaviest part; ok is false when the table has nothing for the
// request's words.
func assocPart(ps []part, table map[string][]assocWord, w float64) (part, bool) {
	if len(ps) == 0 || len(table) == 0 || w <= 0 {
		return part{}, false
	}
	e := newExpansion(ps)
	for _, p := range ps {
		for _, t := range textproc.Terms(p.text) {
			for _, a := range table[t] {
				e.add(a.stem, a.word, a.weight)
			}
		}
	}
	return e.part(assocTerms, w)
}
