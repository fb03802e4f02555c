package retrieval

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// The ranking core: ranked, the one ranking that Retrieve, Explain and
// Search take their matches from, and the stages it runs (rank: every
// signal searched for every part of the query and fused; then the stages
// after the per-tool fusion: servers.go, intents.go, feedback.go,
// assoc.go).

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

// list is one ranked candidate list, its weight in fusion and its group:
// lists of one group are aggregated by maximum, groups are summed.
type list struct {
	hits   []toolindex.Hit
	weight float64
	group  int
}

// normalized returns each hit's score in l for WeightedSum: (s − lo)/σ,
// where lo is the last score and σ the standard deviation of the scores.
// A list of one score, or of equal scores, gives every hit 1.
func (l list) normalized() []float64 {
	out := make([]float64, len(l.hits))
	n := float64(len(l.hits))
	lo := l.hits[len(l.hits)-1].Score
	var mean float64
	for _, h := range l.hits {
		mean += h.Score
	}
	mean /= n
	var varsum float64
	for _, h := range l.hits {
		varsum += (h.Score - mean) * (h.Score - mean)
	}
	sd := math.Sqrt(varsum / n)
	for i, h := range l.hits {
		out[i] = 1
		if sd > 0 {
			out[i] = max(h.Score-lo, 0) / sd
		}
	}
	return out
}

// rank searches the index for every part and fuses the lists into at most
// k matches, best first, ties broken by name.
func (r *Retriever) rank(ctx context.Context, ps []part, k int) ([]Match, error) {
	if len(ps) == 0 || k <= 0 {
		return nil, nil
	}
	depth := max(r.opts.Depth, k)
	filter := r.filter()
	var w Weights
	switch r.opts.Mode {
	case Hybrid:
		w = r.opts.Weights
		if r.sem == nil {
			w.Semantic = 0
		}
	case Vector:
		w = Weights{Vector: 1}
	case Lexical:
		w = Weights{Lexical: 1}
	case Semantic:
		w = Weights{Semantic: 1}
	}
	texts := make([]string, len(ps))
	for i, p := range ps {
		texts[i] = p.text
	}
	// Signals: 0 lexical, 1 vector, 2 semantic; each part's list goes in
	// the part's group of that signal.
	const signals = 3
	// Each signal's lists; the semantic signal (a sentence encoder, the
	// step's largest fixed cost) is embedded and searched on a goroutine of
	// its own while the others run here. Lists are fused in a fixed order.
	var vecLists, semLists, lexLists []list
	// One scan of a signal's vectors serves every part (SearchVectorBatch).
	vectors := func(sig int, emb toolindex.Embedder, weight float64, search func(context.Context, [][]float32, int, func(tool.Tool) bool) ([][]toolindex.Hit, error)) ([]list, error) {
		if weight == 0 {
			return nil, nil
		}
		var sps []part
		var stexts []string
		for i, p := range ps {
			if sig == 2 && p.wordsOnly {
				continue
			}
			sps, stexts = append(sps, p), append(stexts, texts[i])
		}
		vecs, err := r.queries.embed(ctx, emb, stexts)
		if err != nil {
			return nil, err
		}
		hits, err := search(ctx, vecs, depth, filter)
		if err != nil {
			return nil, fmt.Errorf("retrieval: %w", err)
		}
		lists := make([]list, 0, len(sps))
		for i, p := range sps {
			var h []toolindex.Hit
			if hits != nil {
				h = hits[i]
			}
			lists = append(lists, list{hits: h, weight: p.weight * weight, group: signals*p.group + sig})
		}
		return lists, nil
	}
	var semErr error
	var wg sync.WaitGroup
	if r.sem != nil && w.Semantic > 0 {
		wg.Go(func() { semLists, semErr = vectors(2, r.sem, w.Semantic, r.ix.SearchSemanticBatch) })
	}
	vecLists, err := vectors(1, r.emb, w.Vector, r.ix.SearchVectorBatch)
	if err == nil && w.Lexical > 0 {
		for _, p := range ps {
			lexLists = append(lexLists, list{hits: r.ix.SearchLexical(p.text, depth, filter), weight: p.weight * w.Lexical,
				group: signals * p.group})
		}
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if semErr != nil {
		return nil, semErr
	}
	lists := slices.Concat(vecLists, semLists, lexLists)
	return fuse(lists, r.opts.Fusion, k), nil
}

// rrfK is the rank offset of reciprocal-rank fusion, the value of Cormack,
// Clarke and Büttcher (SIGIR 2009), used unchanged by most hybrid search
// engines.
const rrfK = 60

// fuse combines lists into the k best matches. A list contributes
// weight×(rrfK+1)/(rrfK+rank) (RRF) or weight×its normalised score
// (WeightedSum, see list.normalized) to each of its tools. Within a group
// a tool keeps its largest contribution; groups add up. Scores are divided
// by what a tool first in every list would get (the sum over groups of
// their largest first contribution), so that they fall in [0, 1].
func fuse(lists []list, f Fusion, k int) []Match {
	type key struct {
		name  string
		group int
	}
	// Sized once for every hit: a map grown hit by hit allocates at
	// every doubling, the most of a step's allocations.
	hits := 0
	for _, l := range lists {
		hits += len(l.hits)
	}
	contrib := make(map[key]float64, hits)
	tools := make(map[string]tool.Tool, hits)
	// The best contribution of each group's lists, the weight of each
	// group, and the largest normalised first score of any list.
	groupTop := map[int]float64{}
	groupWeight := map[int]float64{}
	maxTop := 0.0
	for _, l := range lists {
		groupWeight[l.group] = max(groupWeight[l.group], l.weight)
		if len(l.hits) == 0 {
			continue
		}
		var norm []float64
		if f == WeightedSum {
			norm = l.normalized()
		}
		for i, h := range l.hits {
			var s float64
			switch f {
			case RRF:
				s = l.weight * (rrfK + 1) / float64(rrfK+i+1)
			case WeightedSum:
				s = l.weight * norm[i]
			}
			if i == 0 {
				groupTop[l.group] = max(groupTop[l.group], s)
				if l.weight > 0 {
					maxTop = max(maxTop, s/l.weight)
				}
			}
			kk := key{h.Tool.Name, l.group}
			contrib[kk] = max(contrib[kk], s)
			tools[h.Tool.Name] = h.Tool
		}
	}
	// A group whose lists found nothing counts as if its best had the
	// largest first score seen: a tool only the other signals find scores
	// at most their share ("hello", which no tool's words match, gives its
	// best vector match about one half, not 1).
	var total float64
	for g, w := range groupWeight {
		if top, ok := groupTop[g]; ok {
			total += top
		} else {
			total += w * maxTop
		}
	}
	score := make(map[string]float64, len(tools))
	for kk, s := range contrib {
		score[kk.name] += s
	}
	out := make([]Match, 0, len(tools))
	for name, t := range tools {
		s := score[name]
		if total > 0 {
			s = min(s/total, 1) // rounding must not give 1.0000000000000002
		}
		out = append(out, Match{Tool: t, Score: s})
	}
	slices.SortFunc(out, func(a, b Match) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Tool.Name, b.Tool.Name)
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}
