package retrieval

import (
	"context"
	"slices"

	"github.com/toolsift/toolsift/usage"
)

// Explanation is how a Retriever ranked the catalog for one Query, laid
// open: the fused ranking Retrieve takes its matches from, and each
// signal's ranking on its own, as deep as the signals search (Options.Depth
// per list). Retriever.Explain returns it; Tool answers for one tool.
type Explanation struct {
	// Mode, K, MinScore and Depth are the options in force.
	Mode     Mode
	K        int
	MinScore float64
	Depth    int
	// Ranked is the fused ranking, best first, as deep as Depth: Retrieve
	// returns its first K (pinned and sticky tools aside) whose Score is
	// at least MinScore.
	Ranked []Match
	// Signals are the rankings of each signal alone (for Hybrid, every
	// signal the index has; otherwise the mode's own), with their weight
	// in the fusion.
	Signals []SignalRanking
	// Pinned and Sticky name the tools Retrieve returns whatever their
	// rank (Options.Pinned; Query.Used unless NoSticky), present in the
	// index.
	Pinned, Sticky []string
	// Usage are the usage memory's votes that lifted a tool of Ranked
	// (Options.Usage), best first: none without a memory, or when no
	// earlier request stands out as like this one.
	Usage []Learned
}

// Learned is what the usage memory (Options.Usage) said of one tool for a
// request, and what that added to its score.
type Learned struct {
	// Vote is the memory's vote: its weight, and the calls, identities and
	// closest earlier request behind it.
	usage.Vote
	// Lift is what the vote added to the tool's score (as the scores are
	// after it: divided by the best when a lift took one past 1).
	Lift float64
}

// SignalRanking is one signal's ranking on its own.
type SignalRanking struct {
	// Signal is Lexical (BM25F), Vector (the Embedder's vectors) or
	// Semantic (the Semantic embedder's).
	Signal Mode
	// Weight is the signal's weight in the fusion (Options.Weights).
	Weight float64
	// Ranked is the signal's ranking, best first; Score is the signal's
	// own fused score over the query's parts, in [0, 1].
	Ranked []Match
}

// ToolRank is what an Explanation says of one tool.
type ToolRank struct {
	// Name is the tool asked about.
	Name string
	// Rank is the tool's place in the fused ranking (1 is best), 0 when
	// it is not among the Depth best; Score is its fused score.
	Rank  int
	Score float64
	// Signals are its place and score in each signal's ranking (Rank 0:
	// beyond that signal's Depth), in Explanation.Signals' order.
	Signals []SignalRank
	// Pinned and Sticky report a tool returned whatever its rank.
	Pinned, Sticky bool
	// Usage is what the usage memory said of the tool (its vote, and the
	// calls behind it; zero when it said nothing).
	Usage Learned
	// Retrieved reports a tool among Retrieve's K ranked matches;
	// BelowMinScore one that ranked within K but whose Score is below
	// MinScore.
	Retrieved, BelowMinScore bool
}

// SignalRank is a tool's place in one signal's ranking.
type SignalRank struct {
	Signal Mode
	Rank   int // 1 is best; 0 when the signal's lists did not reach it
	Score  float64
}

// Explain ranks the catalog for q as Retrieve does and returns the whole
// fused ranking with each signal's own, so that a caller can tell why a
// tool was, or was not, retrieved: ranked below K, under MinScore, or
// missed by a signal. It searches once more per signal than Retrieve.
func (r *Retriever) Explain(ctx context.Context, q Query) (Explanation, error) {
	ex := Explanation{Mode: r.opts.Mode, K: r.opts.K, MinScore: r.opts.MinScore, Depth: r.opts.Depth}
	ps := parts(q)
	// As deep as Retrieve ranks, and no deeper: the depth of each list
	// changes its normalised scores (see list.normalized), so a deeper
	// ranking would not be the one Retrieve took its matches from.
	n := max(r.opts.Depth, r.opts.K+len(r.opts.Pinned)+len(q.Used))
	ranked, votes, err := r.rankedVotes(ctx, q, n)
	if err != nil {
		return ex, err
	}
	ex.Ranked, ex.Usage = ranked, votes
	var signals []Mode
	switch r.opts.Mode {
	case Hybrid:
		signals = []Mode{Lexical, Vector}
		if r.sem != nil {
			signals = append(signals, Semantic)
		}
	default:
		signals = []Mode{r.opts.Mode}
	}
	w := r.opts.Weights
	for _, s := range signals {
		weight := 1.0
		if r.opts.Mode == Hybrid {
			weight = map[Mode]float64{Lexical: w.Lexical, Vector: w.Vector, Semantic: w.Semantic}[s]
		}
		one := *r
		one.opts.Mode = s
		got, err := one.rank(ctx, ps, n)
		if err != nil {
			return ex, err
		}
		ex.Signals = append(ex.Signals, SignalRanking{Signal: s, Weight: weight, Ranked: got})
	}
	seen := map[string]bool{}
	for _, name := range r.opts.Pinned {
		if _, ok := r.ix.Get(name); ok && !seen[name] {
			seen[name] = true
			ex.Pinned = append(ex.Pinned, name)
		}
	}
	if !r.opts.NoSticky {
		for _, name := range q.Used {
			if _, ok := r.ix.Get(name); ok && !seen[name] {
				seen[name] = true
				ex.Sticky = append(ex.Sticky, name)
			}
		}
	}
	return ex, nil
}

// Tool returns what e says of the tool named name (Rank 0 everywhere for
// a name the ranking never reached, or that the index lacks).
func (e Explanation) Tool(name string) ToolRank {
	special := func(n string) bool { return slices.Contains(e.Pinned, n) || slices.Contains(e.Sticky, n) }
	tr := ToolRank{Name: name, Pinned: slices.Contains(e.Pinned, name), Sticky: slices.Contains(e.Sticky, name)}
	// Retrieve's walk: pinned and sticky tools do not count towards K,
	// and the first match under MinScore ends it.
	taken, stopped := 0, false
	for i, m := range e.Ranked {
		sp := special(m.Tool.Name)
		if !sp && !stopped && (taken == e.K || m.Score < e.MinScore) {
			stopped = true
		}
		if m.Tool.Name == name {
			tr.Rank, tr.Score = i+1, m.Score
			if !sp {
				tr.Retrieved = !stopped
				tr.BelowMinScore = stopped && taken < e.K && m.Score < e.MinScore
			}
			break
		}
		if !sp && !stopped {
			taken++
		}
	}
	if i := slices.IndexFunc(e.Usage, func(l Learned) bool { return l.Tool == name }); i >= 0 {
		tr.Usage = e.Usage[i]
	}
	for _, s := range e.Signals {
		sr := SignalRank{Signal: s.Signal}
		if i := slices.IndexFunc(s.Ranked, func(m Match) bool { return m.Tool.Name == name }); i >= 0 {
			sr.Rank, sr.Score = i+1, s.Ranked[i].Score
		}
		tr.Signals = append(tr.Signals, sr)
	}
	return tr
}
