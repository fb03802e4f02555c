package retrieval

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// Multi-intent requests (Options.IntentQuota): "file the bug in the
// tracker, then tell the channel" asks two things, and the words of one
// ask can drown the other's in a whole-request ranking. The request is
// split into its asks (sentences, then clauses joined by "then", "also",
// "and then", "as well as", ";"), each ask is ranked on its own, and the
// best IntentQuota tools of each ask keep at least the score they have
// for their ask, so that every ask has tools near the top.

// maxIntents bounds the asks ranked for one request.
const maxIntents = 4

// minIntentWords is the fewest words an ask has; a shorter clause joins the
// one before it ("then stop").
const minIntentWords = 3

// clauseBreak matches where one ask ends and the next begins inside a
// sentence.
var clauseBreak = regexp.MustCompile(`(?i)\s*;\s*|,?\s+(?:and then|and also|as well as|then|also|plus)\s+`)

// intents returns the asks of a request, in order; one ask (or none) when
// it has no break.
func intents(text string) []string {
	var out []string
	for _, s := range sentences(text) {
		for _, c := range clauseBreak.Split(s, -1) {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			if len(strings.Fields(c)) < minIntentWords && len(out) > 0 {
				out[len(out)-1] += " " + c
				continue
			}
			out = append(out, c)
		}
	}
	if len(out) > maxIntents {
		out[maxIntents-1] = strings.Join(out[maxIntents-1:], " ")
		out = out[:maxIntents]
	}
	return out
}

// ranked is the ranking Retrieve and Explain take their matches from: the
// fused ranking of the query's parts, lifted by the servers' scores
// (Options.ServerWeight) and with each ask's best tools kept near the top
// (Options.IntentQuota); at most k matches, best first.
func (r *Retriever) ranked(ctx context.Context, q Query, k int) ([]Match, error) {
	ps := parts(q)
	if r.opts.Associate > 0 {
		table, err := assocOnce()
		if err != nil {
			return nil, err
		}
		if ap, ok := assocPart(ps, table, r.opts.Associate); ok {
			ps = append(ps, ap)
		}
	}
	// Servers lift the Hybrid ranking only: the single-signal modes stay
	// what they say (and Lexical needs no embedder).
	sw := r.serverWeight()
	deep := k
	if sw > 0 || r.opts.IntentQuota > 0 || r.opts.Feedback > 0 {
		deep = max(k, r.opts.Depth)
	}
	lift := func(ps []part, ms []Match) ([]Match, error) {
		if sw == 0 {
			return ms, nil
		}
		sc, err := r.serverScores(ctx, ps)
		if err != nil {
			return nil, err
		}
		return liftByServer(ms, sc, sw, len(ms)), nil
	}
	var asks []string
	if (r.opts.IntentQuota > 0 || sw > 0) && strings.TrimSpace(q.Thought) == "" {
		asks = intents(clip(q.Task, maxPartRunes))
	}
	// Each ask ranked on its own (not lifted yet): the quota's candidates,
	// and the gate that decides whether the request has several asks at
	// all, for ranking.
	var askRanks [][]Match
	if len(asks) >= 2 && r.opts.IntentQuota > 0 {
		for _, a := range asks {
			ms, err := r.rank(ctx, []part{{text: a, weight: thoughtWeight}}, deep)
			if err != nil {
				return nil, err
			}
			askRanks = append(askRanks, ms)
		}
		if !distinctServers(askRanks) {
			// The asks' best tools share a server (or the catalog has
			// none): clauses of one need ("find the flight, then book
			// it"), which the whole request ranks best (BFCL and
			// StableToolBench lost with an ungated quota,
			// docs/measurements.md): ranked, and lifted, as one ask.
			asks, askRanks = nil, nil
		}
	}
	if len(asks) >= 2 && r.opts.IntentQuota == 0 {
		// A request of several asks is not lifted by its servers unless
		// each ask keeps its own tools: the whole request lifts the one
		// server that fits it best, over the others' tools (the
		// multi-intent set, docs/measurements.md).
		lift = func(_ []part, ms []Match) ([]Match, error) { return ms, nil }
		asks = nil
	}
	out, err := r.rank(ctx, ps, deep)
	if err != nil {
		return nil, err
	}
	if r.opts.Feedback > 0 {
		if fp, ok := feedbackPart(ps, out, r.opts.Feedback); ok {
			ps = append(slices.Clip(ps), fp)
			if out, err = r.rank(ctx, ps, deep); err != nil {
				return nil, err
			}
		}
	}
	// The whole request is lifted by its servers too, even when it has
	// several asks: lifting only each ask measured worse on both the
	// paraphrase and the multi-intent sets (docs/measurements.md).
	if out, err = lift(ps, out); err != nil {
		return nil, err
	}
	if len(asks) >= 2 {
		best := make(map[string]Match, len(out))
		for _, m := range out {
			best[m.Tool.Name] = m
		}
		for i, a := range asks {
			ap := []part{{text: a, weight: thoughtWeight}}
			ms, err := lift(ap, askRanks[i])
			if err != nil {
				return nil, err
			}
			for _, m := range ms[:min(r.opts.IntentQuota, len(ms))] {
				if b, ok := best[m.Tool.Name]; !ok || m.Score > b.Score {
					best[m.Tool.Name] = m
				}
			}
		}
		out = out[:0]
		for _, m := range best {
			out = append(out, m)
		}
		sortMatches(out)
	}
	return out[:min(k, len(out))], nil
}

// distinctServers reports whether the best tools of the asks' rankings
// come from at least two servers.
func distinctServers(ranks [][]Match) bool {
	first := ""
	for _, ms := range ranks {
		if len(ms) == 0 || ms[0].Tool.Server == "" {
			continue
		}
		switch s := ms[0].Tool.Server; {
		case first == "":
			first = s
		case s != first:
			return true
		}
	}
	return false
}
