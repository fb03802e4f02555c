package retrieval

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
)

// Pseudo-relevance feedback (rankopt.Features.Feedback, off by default), after RM3 (Abdul-Jaleel et
// al. 2004, Lavrenko and Croft 2001): the best tools of a first ranking
// are taken as relevant, the words they share that the request does not use
// are added to it, and the tools are ranked again. A request that says
// "tell the channel" finds a messaging tool whose name and description say
// "post", "message" and "slack"; those words then find that server's
// other messaging tools, which share them. Only the word signals (BM25F
// and the hashed n-grams) search the expansion: it is a bag of words, not
// a sentence for the sentence encoder.

// Bounds and weight of the expansion.
const (
	feedbackTerms      = 10  // words added to the request
	feedbackWeight     = 0.5 // of the expansion, relative to the request's weight
	feedbackDescRunes  = 200 // of each tool's description read
	minFeedbackWordLen = 3   // shorter words are not added
)

// feedbackPart returns the expansion of ps from the best n tools of ranked
// (best first) as a part searched by the word signals only, in a group of
// its own; ok is false when there is nothing to add.
func feedbackPart(ps []part, ranked []Match, n int) (part, bool) {
	if len(ps) == 0 || len(ranked) == 0 || n <= 0 {
		return part{}, false
	}
	// Each term's weight is the sum over the feedback tools of the tool's
	// weight times the term's share of the tool's words (RM1's P(w|D)·P(Q|D)).
	// The tool's weight is 1/rank, not its fused score: fusion gives a
	// list's last candidate 0, which would leave out the second of two.
	e := newExpansion(ps)
	for i, m := range ranked[:min(n, len(ranked))] {
		var words []string
		for _, w := range textproc.Words(m.Tool.Name + " " + m.Tool.OriginalName + " " + m.Tool.Title + " " +
			clip(m.Tool.Description, feedbackDescRunes)) {
			if len(w) >= minFeedbackWordLen && !textproc.IsStopword(w) && !isDigits(w) {
				words = append(words, w)
			}
		}
		if len(words) == 0 {
			continue
		}
		share := 1 / float64(i+1) / float64(len(words))
		for _, w := range words {
			e.add(textproc.Stem(w), w, share)
		}
	}
	return e.part(feedbackTerms, feedbackWeight)
}

// expansion gathers the words an expansion adds to a request (ps), each
// with a weight summed over its sightings, by stem; the request's own
// terms are never added, and a term is written as the first word that
// stemmed to it, so that the analysers find it again.
type expansion struct {
	inQuery map[string]bool
	group   int     // the expansion's: after every part's
	weight  float64 // the heaviest part's
	words   map[string]*expansionWord
}

type expansionWord struct {
	word   string
	weight float64
	first  int // order of first sight, for ties
}

func newExpansion(ps []part) *expansion {
	e := &expansion{inQuery: map[string]bool{}, words: map[string]*expansionWord{}}
	for _, p := range ps {
		for _, t := range textproc.Terms(p.text) {
			e.inQuery[t] = true
		}
		e.group = max(e.group, p.group+1)
		e.weight = max(e.weight, p.weight)
	}
	return e
}

// add counts weight w for the word whose stem is stem.
func (e *expansion) add(stem, word string, w float64) {
	if e.inQuery[stem] {
		return
	}
	x, ok := e.words[stem]
	if !ok {
		x = &expansionWord{word: word, first: len(e.words)}
		e.words[stem] = x
	}
	x.weight += w
}

// part returns the n heaviest words as a part searched by the word
// signals only, in a group of its own, weighing rel times the heaviest
// part of the request; ok is false when there is no word to add.
func (e *expansion) part(n int, rel float64) (part, bool) {
	if len(e.words) == 0 {
		return part{}, false
	}
	list := slices.Collect(maps.Values(e.words))
	slices.SortFunc(list, func(a, b *expansionWord) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return a.first - b.first
	})
	words := make([]string, 0, n)
	for _, x := range list[:min(n, len(list))] {
		words = append(words, x.word)
	}
	return part{text: strings.Join(words, " "), weight: rel * e.weight, group: e.group, wordsOnly: true}, true
}

func isDigits(w string) bool {
	for _, c := range w {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
