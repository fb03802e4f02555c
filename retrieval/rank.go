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
// (the intent quota, off); at most k matches, best first.
func (r *Retriever) ranked(ctx context.Context, q Query, k int) ([]Match, error) {
	ms, _, err := r.rankedVotes(ctx, q, k)
	return ms, err
}

// rankedVotes is ranked that also returns what the usage memory's votes
// added to the tools they lifted (Options.Usage).
func (r *Retriever) rankedVotes(ctx context.Context, q Query, k int) ([]Match, []Learned, error) {
	ps := parts(q)
	if r.opts.feat.Associate > 0 {
		table, err := assocOnce()
		if err != nil {
			return nil, nil, err
		}
		if ap, ok := assocPart(ps, table, r.opts.feat.Associate); ok {
			ps = append(ps, ap)
		}
	}
	// Servers lift the Hybrid ranking only: the single-signal modes stay
	// what they say (and Lexical needs no embedder).
	sw := r.serverWeight()
	deep := k
	if sw > 0 || r.opts.feat.IntentQuota > 0 || r.opts.feat.Feedback > 0 || r.learns(ctx) {
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
		return liftByServer(ms, sc, sw, len(ms), r.opts.feat.AdditiveLift), nil
	}
	var asks []string
	if (r.opts.feat.IntentQuota > 0 || sw > 0) && strings.TrimSpace(q.Thought) == "" {
		asks = intents(clip(q.Task, maxPartRunes))
	}
	// Each ask ranked on its own (not lifted yet): the quota's candidates,
	// and the gate that decides whether the request has several asks at
	// all, for ranking.
	var askRanks [][]Match
	if len(asks) >= 2 && r.opts.feat.IntentQuota > 0 {
		for _, a := range asks {
			ms, err := r.rank(ctx, []part{{text: a, weight: thoughtWeight}}, deep)
			if err != nil {
				return nil, nil, err
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
	if len(asks) >= 2 && r.opts.feat.IntentQuota == 0 {
		// A request of several asks is not lifted by its servers unless
		// each ask keeps its own tools: the whole request lifts the one
		// server that fits it best, over the others' tools (the
		// multi-intent set, docs/measurements.md).
		lift = func(_ []part, ms []Match) ([]Match, error) { return ms, nil }
		asks = nil
	}
	out, tops, err := r.rankTops(ctx, ps, deep, nil)
	if err != nil {
		return nil, nil, err
	}
	if r.opts.feat.Feedback > 0 {
		if fp, ok := feedbackPart(ps, out, r.opts.feat.Feedback); ok {
			ps = append(slices.Clip(ps), fp)
			if out, err = r.rank(ctx, ps, deep); err != nil {
				return nil, nil, err
			}
		}
	}
	// The whole request is lifted by its servers too, even when it has
	// several asks: lifting only each ask measured worse on both the
	// paraphrase and the multi-intent sets (docs/measurements.md).
	if out, err = lift(ps, out); err != nil {
		return nil, nil, err
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
				return nil, nil, err
			}
			for _, m := range ms[:min(r.opts.feat.IntentQuota, len(ms))] {
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
	if !r.opts.feat.NoReach {
		out = keepInReach(out, tops, r.reachRank())
	}
	var votes []Learned
	if out, votes, err = r.learned(ctx, usageText(ps), out, nil); err != nil {
		return nil, nil, err
	}
	out = r.namedFirst(q.Thought+"\n"+q.Task, out)
	return out[:min(k, len(out))], votes, nil
}

// A signal's confident best is kept in reach (keepInReach): the semantic
// signal's best tool for the request's whole text, when its second scores
// less than reachMargin times it, is moved up to place reachRank (second:
// the fused best stays first) if the fused ranking put it lower. The word signals (BM25F and the hashed
// n-grams) see the same words, so one word a tool shares with the request
// counts twice, and a server's lift can add a third time ("add 2 and 3":
// "add" in memory's add_observations lifted every memory tool over the sum
// tool the sentence encoder ranked first by far). Measured on every set
// (docs/measurements.md, "Everyday requests"): the semantic signal's best
// alone, behind a margin; every signal's best, or the semantic best
// without a margin, lost on the paraphrase sets; kept at the second place
// or the third, every figure is the same, and at the first, the public
// sets' hit@1 falls.
const (
	reachRank   = 2
	reachMargin = 0.85
	reachSignal = 2 // the semantic signal's lists (see rankTops)
)

// reachRank is the place keepInReach moves a signal's best up to:
// reachRank, or the benchmarks' rankopt.Features.ReachRank.
func (r *Retriever) reachRank() int {
	if n := r.opts.feat.ReachRank; n > 0 {
		return n
	}
	return reachRank
}

// searchRanked is the ranking Search takes its matches from: query
// searched as one text (no sentence split, no server lift: it is one need
// the model words), each signal's best kept in reach and the tools it
// names first; at most k matches, best first.
func (r *Retriever) searchRanked(ctx context.Context, query string, k int, in func(tool.Tool) bool) ([]Match, error) {
	deep := k
	if r.learns(ctx) {
		// As deep as the lists go (the same ranking): a voted tool the
		// first k lack is lifted from where it stands.
		deep = max(k, r.opts.Depth)
	}
	out, tops, err := r.rankTops(ctx, []part{{text: query, weight: thoughtWeight}}, deep, in)
	if err != nil {
		return nil, err
	}
	if !r.opts.feat.NoReach {
		out = keepInReach(out, tops, r.reachRank())
	}
	if out, _, err = r.learned(ctx, query, out, in); err != nil {
		return nil, err
	}
	out = r.namedFirst(query, out)
	if in != nil { // a tool the query names is put first from the index: outside in, it is not there
		out = slices.DeleteFunc(out, func(m Match) bool { return !in(m.Tool) })
	}
	return out[:min(k, len(out))], nil
}

// keepInReach moves each tool in tops (a signal's best) that ranks below
// the first n of out up to the last places of the first n, above the tools
// it passes (at most n-1 of them, so out's best stays first, but for n =
// 1): one signal's confident match stays in reach when the other signals
// outvote it. out is best first; a moved tool's score is raised to just
// above the tool it displaces.
func keepInReach(out []Match, tops []string, n int) []Match {
	if n < 1 || len(out) <= n {
		return out
	}
	var moved []Match
	seen := map[string]bool{}
	for _, name := range tops {
		if seen[name] {
			continue
		}
		seen[name] = true
		i := slices.IndexFunc(out, func(m Match) bool { return m.Tool.Name == name })
		if i >= n {
			moved = append(moved, out[i])
		}
	}
	if len(moved) == 0 {
		return out
	}
	moved = moved[:min(len(moved), max(n-1, 1))]
	sortMatches(moved)
	rest := slices.DeleteFunc(slices.Clone(out), func(m Match) bool {
		return slices.ContainsFunc(moved, func(x Match) bool { return x.Tool.Name == m.Tool.Name })
	})
	at := n - len(moved)
	res := make([]Match, 0, len(out))
	res = append(res, rest[:at]...)
	for _, m := range moved {
		above, below := 1.0, rest[at].Score
		if len(res) > 0 {
			above = res[len(res)-1].Score
		}
		m.Score = max(m.Score, (above+below)/2)
		res = append(res, m)
	}
	return append(res, rest[at:]...)
}

// list is one ranked candidate list, its weight in fusion and its group:
// lists of one group are aggregated by maximum, groups are summed.
type list struct {
	hits   []toolindex.Hit
	weight float64
	group  int
}

// normalized returns each hit's score in l for the weighted sum: (s − lo)/σ,
// where lo is the last score and σ the standard deviation of the scores.
// A list of one score, or of equal scores, gives every hit 1. The scores
// are appended to buf.
func (l list) normalized(buf []float64) []float64 {
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
	for _, h := range l.hits {
		s := 1.0
		if sd > 0 {
			s = max(h.Score-lo, 0) / sd
		}
		buf = append(buf, s)
	}
	return buf
}

// rank searches the index for every part and fuses the lists into at most
// k matches, best first, ties broken by name.
func (r *Retriever) rank(ctx context.Context, ps []part, k int) ([]Match, error) {
	ms, _, err := r.rankTops(ctx, ps, k, nil)
	return ms, err
}

// rankTops is rank that also returns the semantic signal's best tool for
// the first part (the request's whole text) when it stands clear of its
// second: the tool keepInReach keeps in reach. Only the tools in accepts
// (nil: all) are ranked, besides the Servers option's filter.
func (r *Retriever) rankTops(ctx context.Context, ps []part, k int, in func(tool.Tool) bool) ([]Match, []string, error) {
	if len(ps) == 0 || k <= 0 {
		return nil, nil, nil
	}
	depth := max(r.opts.Depth, k)
	filter := r.filter()
	if servers := filter; in != nil && servers != nil {
		filter = func(t tool.Tool) bool { return servers(t) && in(t) }
	} else if in != nil {
		filter = in
	}
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
		wg.Go(func() { semLists, semErr = vectors(2, r.sem, w.Semantic, r.searchSemantic) })
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
		return nil, nil, err
	}
	if semErr != nil {
		return nil, nil, semErr
	}
	lists := slices.Concat(vecLists, semLists, lexLists)
	var tops []string
	for _, l := range lists {
		if l.group/signals != ps[0].group || l.group%signals != reachSignal || len(l.hits) == 0 || l.weight == 0 {
			continue
		}
		if len(l.hits) == 1 || l.hits[1].Score < reachMargin*l.hits[0].Score {
			tops = append(tops, l.hits[0].Tool.Name)
		}
	}
	return fuse(lists, r.fusion(), k), tops, nil
}

// rrfK is the rank offset of reciprocal-rank fusion, the value of Cormack,
// Clarke and Büttcher (SIGIR 2009), used unchanged by most hybrid search
// engines.
const rrfK = 60

// fusion is the rule fuse combines the lists with: the weighted sum,
// or RRF when rankopt.Features.RRF measures it.
func (r *Retriever) fusion() fusion {
	if r.opts.feat.RRF {
		return rrf
	}
	return weightedSum
}

// fuse combines lists into the k best matches. A list contributes
// weight×(rrfK+1)/(rrfK+rank) (rrf) or weight×its normalised score
// (weightedSum, see list.normalized) to each of its tools. Within a group
// a tool keeps its largest contribution; groups add up, in the order the
// lists name them (so that two tools with the same contributions get the
// same score, and ties fall to the name). Scores are divided by what a
// tool first in every list would get (the sum over groups of their largest
// first contribution), so that they fall in [0, 1].
//
// Every step and search fuses, so fuse works in a fuser reused across
// calls (fusers) and copies a tool only into the k matches it returns.
func fuse(lists []list, f fusion, k int) []Match {
	fu := fusers.Get().(*fuser)
	defer fu.release()
	// The groups, in order of first appearance: a tool's contributions
	// are a row of len(groups) slots.
	groups := fu.groups
	for _, l := range lists {
		if !slices.Contains(groups, l.group) {
			groups = append(groups, l.group)
		}
	}
	fu.groups = groups
	ng := len(groups)
	// The weight of each group, its lists' best first contribution (top,
	// seen: whether any list of it found anything), and the largest
	// normalised first score of any list.
	for range groups {
		fu.weight = append(fu.weight, 0)
		fu.top = append(fu.top, 0)
		fu.seen = append(fu.seen, false)
	}
	maxTop := 0.0
	for _, l := range lists {
		g := slices.Index(groups, l.group)
		fu.weight[g] = max(fu.weight[g], l.weight)
		if len(l.hits) == 0 {
			continue
		}
		var norm []float64
		if f == weightedSum {
			fu.norm = l.normalized(fu.norm[:0])
			norm = fu.norm
		}
		for i := range l.hits {
			h := &l.hits[i]
			var s float64
			switch f {
			case rrf:
				s = l.weight * (rrfK + 1) / float64(rrfK+i+1)
			case weightedSum:
				s = l.weight * norm[i]
			}
			if i == 0 {
				fu.seen[g], fu.top[g] = true, max(fu.top[g], s)
				if l.weight > 0 {
					maxTop = max(maxTop, s/l.weight)
				}
			}
			t, ok := fu.idx[h.Tool.Name]
			if !ok {
				t = len(fu.tools)
				fu.idx[h.Tool.Name] = t
				fu.tools = append(fu.tools, nil)
				for range ng {
					fu.contrib = append(fu.contrib, 0)
				}
			}
			fu.tools[t] = &h.Tool // the last list's copy, as a map of tools by name kept
			c := &fu.contrib[t*ng+g]
			*c = max(*c, s)
		}
	}
	// A group whose lists found nothing counts as if its best had the
	// largest first score seen: a tool only the other signals find scores
	// at most their share ("hello", which no tool's words match, gives its
	// best vector match about one half, not 1).
	var total float64
	for g := range groups {
		if fu.seen[g] {
			total += fu.top[g]
		} else {
			total += fu.weight[g] * maxTop
		}
	}
	for t, tl := range fu.tools {
		var s float64
		for _, c := range fu.contrib[t*ng : (t+1)*ng] {
			s += c
		}
		if total > 0 {
			s = min(s/total, 1) // rounding must not give 1.0000000000000002
		}
		fu.fused = append(fu.fused, fusedTool{score: s, name: tl.Name, t: t})
	}
	slices.SortFunc(fu.fused, func(a, b fusedTool) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]Match, min(k, len(fu.fused)))
	for i := range out {
		e := fu.fused[i]
		out[i] = Match{Tool: *fu.tools[e.t], Score: e.score}
	}
	return out
}

// A fuser is fuse's scratch space; fusers keeps them between calls.
type fuser struct {
	idx     map[string]int // tool name → its place in tools
	tools   []*tool.Tool   // in the lists fused (never kept past fuse)
	contrib []float64      // tool t's best contribution to group g: contrib[t*len(groups)+g]
	groups  []int
	weight  []float64
	top     []float64
	seen    []bool
	norm    []float64
	fused   []fusedTool
}

// fusedTool is a tool's fused score, its name and its place in fuser.tools.
type fusedTool struct {
	score float64
	name  string
	t     int
}

var fusers = sync.Pool{New: func() any { return &fuser{idx: map[string]int{}} }}

// release empties fu, dropping what points into the lists, and keeps it
// for the next fuse; a fuser grown by an outsized call is dropped.
func (fu *fuser) release() {
	if len(fu.tools) > 1<<14 {
		return
	}
	clear(fu.idx)
	clear(fu.tools)
	fu.tools = fu.tools[:0]
	fu.contrib = fu.contrib[:0]
	fu.groups = fu.groups[:0]
	fu.weight, fu.top, fu.seen = fu.weight[:0], fu.top[:0], fu.seen[:0]
	fu.norm = fu.norm[:0]
	clear(fu.fused)
	fu.fused = fu.fused[:0]
	fusers.Put(fu)
}

// searchSemantic searches the semantic vectors of the tools and, with
// windows, those of their long descriptions' further windows (windows.go).
func (r *Retriever) searchSemantic(ctx context.Context, vecs [][]float32, k int, filter func(tool.Tool) bool) ([][]toolindex.Hit, error) {
	hits, err := r.ix.SearchSemanticBatch(ctx, vecs, k, filter)
	if err != nil || r.opts.feat.WindowWeight == 0 {
		return hits, err
	}
	wix, err := r.windowIndex(ctx)
	if err != nil || wix == nil {
		return hits, err
	}
	wins, err := wix.SearchSemanticBatch(ctx, vecs, k, filter)
	if err != nil {
		return nil, err
	}
	return r.withWindows(hits, wins, k), nil
}
