package retrieval

import (
	"slices"
	"strings"

	"github.com/toolsift/toolsift/internal/textproc"
)

// Pseudo-relevance feedback (Options.Feedback), after RM3 (Abdul-Jaleel et
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
	inQuery := map[string]bool{}
	group, weight := 0, 0.0
	for _, p := range ps {
		for _, w := range textproc.Terms(p.text) {
			inQuery[w] = true
		}
		group = max(group, p.group+1)
		weight = max(weight, p.weight)
	}
	// Each term's weight is the sum over the feedback tools of the tool's
	// weight times the term's share of the tool's words (RM1's P(w|D)·P(Q|D)).
	// The tool's weight is 1/rank, not its fused score: fusion gives a
	// list's last candidate 0, which would leave out the second of two.
	// A term is written as the first word that stemmed to it, so that the
	// analysers find it again.
	type term struct {
		word   string
		weight float64
		first  int // order of first sight, for ties
	}
	terms := map[string]*term{}
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
			s := textproc.Stem(w)
			if inQuery[s] {
				continue
			}
			t, ok := terms[s]
			if !ok {
				t = &term{word: w, first: len(terms)}
				terms[s] = t
			}
			t.weight += share
		}
	}
	if len(terms) == 0 {
		return part{}, false
	}
	list := make([]*term, 0, len(terms))
	for _, t := range terms {
		list = append(list, t)
	}
	slices.SortFunc(list, func(a, b *term) int {
		if a.weight != b.weight {
			if a.weight > b.weight {
				return -1
			}
			return 1
		}
		return a.first - b.first
	})
	words := make([]string, 0, feedbackTerms)
	for _, t := range list[:min(feedbackTerms, len(list))] {
		words = append(words, t.word)
	}
	return part{text: strings.Join(words, " "), weight: feedbackWeight * weight, group: group, wordsOnly: true}, true
}

func isDigits(w string) bool {
	for _, c := range w {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
