package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// Server-aware ranking (Options.ServerWeight): each server of the catalog
// is one document (its name, then each of its tools' name and first
// sentence), indexed with the tool index's own embedders and ranked for the
// query with the same fusion as the tools, by the vector signals (the
// n-grams and the semantic vectors; BM25F only when neither is weighed).
// A tool's score becomes tool × (1 + w × its server's) / (1 + w): the
// server is a prior on its tools' own evidence, so a request that fits a
// server lifts that server's tools in proportion to how well each fits it,
// and a tool the request barely matches gains little from its server. The
// lift used to be added, (tool + w × server) / (1 + w)
// (rankopt.Features.AdditiveLift): every tool of a server the request's
// words fit rose by the same amount, tools that match nothing of the
// request among them, and crowded out the matching tools of other servers
// (docs/measurements.md, "Everyday requests", third round: the gold a step
// sends rose on the sets with servers when the lift became proportional).

// serverDocSentenceRunes bounds each tool's sentence in a server document.
const serverDocSentenceRunes = 120

// servers is the index of server documents, brought up to date when the
// tool index's generation moves. It lives as long as the Retriever, so
// that a catalog change re-embeds only the documents of the servers whose
// tools changed (Upsert keeps the vectors of unchanged documents).
type servers struct {
	mu  sync.Mutex
	gen uint64
	ok  bool
	ix  *toolindex.Index // every server document, nil before the first
	n   int              // servers indexed
}

// serverIndex returns the index of server documents for the tool index's
// current generation, updating it when the catalog changed. It returns
// nil when the catalog has fewer than two servers: nothing to tell apart.
func (r *Retriever) serverIndex(ctx context.Context) (*toolindex.Index, error) {
	s := r.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	gen := r.ix.Generation()
	if !s.ok || s.gen != gen {
		if err := s.update(ctx, r); err != nil {
			return nil, err
		}
		s.gen, s.ok = gen, true
	}
	if s.n < 2 {
		return nil, nil
	}
	return s.ix, nil
}

// Prepare builds now what a first step would otherwise build: the index of
// server documents (Options.ServerWeight, in Hybrid mode), whose vectors
// then reach the index's VectorCache at the next flush. toolsift calls it
// when Open returns, so that a first request does not pay for it. A later
// catalog change is brought in by the next step.
func (r *Retriever) Prepare(ctx context.Context) error {
	if r.opts.feat.WindowWeight > 0 && r.sem != nil && (r.opts.Mode == Hybrid || r.opts.Mode == Semantic) {
		if _, err := r.windowIndex(ctx); err != nil {
			return err
		}
	}
	if r.serverWeight() == 0 {
		return nil
	}
	_, err := r.serverIndex(ctx)
	return err
}

// serverWeight is Options.ServerWeight where it applies (Hybrid mode: the
// server documents are ranked by every signal, as the tools are), else 0.
func (r *Retriever) serverWeight() float64 {
	if r.opts.Mode != Hybrid {
		return 0
	}
	return r.opts.ServerWeight
}

// update makes s.ix hold one document per server of r's catalog: new and
// changed ones embedded, those of servers that left removed.
func (s *servers) update(ctx context.Context, r *Retriever) error {
	docs := map[string]*strings.Builder{}
	for t := range r.ix.All() {
		if t.Server == "" {
			continue
		}
		b, ok := docs[t.Server]
		if !ok {
			b = &strings.Builder{}
			docs[t.Server] = b
			b.WriteString(t.Server)
			b.WriteString(".\n")
		}
		name := t.OriginalName
		if name == "" {
			name = t.Name
		}
		b.WriteString(name)
		if d := textproc.FirstSentence(t.Description, serverDocSentenceRunes); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
		b.WriteString("\n")
	}
	s.n = len(docs)
	if s.ix == nil && len(docs) < 2 {
		return nil
	}
	// The tool index's vector cache keeps the server documents' vectors
	// between runs too: with 73 servers, encoding them took over a second
	// of a process's first step.
	tools := make([]tool.Tool, 0, len(docs))
	for name, b := range docs {
		tools = append(tools, tool.Tool{Name: name, Server: name, Description: b.String()})
	}
	return r.syncSideIndex(ctx, &s.ix, "server index", tools)
}

// syncSideIndex makes *ix, an index beside the tools' (server documents,
// description windows) that shares their vector cache, hold exactly docs:
// it is made at first use, new and changed documents are embedded in name
// order, the others removed. what names it in errors.
func (r *Retriever) syncSideIndex(ctx context.Context, ix **toolindex.Index, what string, docs []tool.Tool) error {
	if *ix == nil {
		if len(docs) == 0 {
			return nil
		}
		x, err := toolindex.New(r.emb, &toolindex.Options{Semantic: r.sem, Cache: r.ix.VectorCache()})
		if err != nil {
			return fmt.Errorf("retrieval: %s: %w", what, err)
		}
		*ix = x
	}
	slices.SortFunc(docs, func(a, b tool.Tool) int { return strings.Compare(a.Name, b.Name) })
	if _, err := (*ix).Upsert(ctx, docs...); err != nil {
		return fmt.Errorf("retrieval: %s: %w", what, err)
	}
	keep := make(map[string]bool, len(docs))
	for _, d := range docs {
		keep[d.Name] = true
	}
	var gone []string
	for t := range (*ix).All() {
		if !keep[t.Name] {
			gone = append(gone, t.Name)
		}
	}
	(*ix).Remove(gone...)
	return nil
}

// serverScores ranks the servers for ps as the tools are ranked (same
// mode, weights and fusion, but BM25F's weight, see below) and returns
// each server's score in [0, 1]; nil when there is nothing to rank.
func (r *Retriever) serverScores(ctx context.Context, ps []part) (map[string]float64, error) {
	six, err := r.serverIndex(ctx)
	if err != nil || six == nil {
		return nil, err
	}
	sr := &Retriever{ix: six, emb: r.emb, sem: r.sem, opts: r.opts, srv: &servers{}, names: &names{}, win: &windows{}, queries: r.queries}
	sr.opts.Depth = six.Len()
	sr.opts.feat.WindowWeight = 0
	// The server documents are ranked by the vector signals, not BM25F:
	// a server document is its tools' words, so its BM25F would count a
	// third time the words the tools' own BM25F and n-grams count (measured
	// in docs/measurements.md, "Everyday requests", third round). With no
	// vector signal weighed, BM25F ranks them.
	if w := sr.opts.Weights; !r.opts.feat.ServerLexical && (w.Vector > 0 || (w.Semantic > 0 && r.sem != nil)) {
		sr.opts.Weights.Lexical = 0
	}
	ranked, err := sr.rank(ctx, ps, six.Len())
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(ranked))
	for _, m := range ranked {
		out[m.Tool.Name] = m.Score
	}
	return out, nil
}

// liftByServer rescores ranked (best first) with its servers' scores:
// tool × (1 + w × server) / (1 + w), or with additive (the rule before)
// (tool + w × server) / (1 + w), and sorts it again; k bounds the result.
func liftByServer(ranked []Match, server map[string]float64, w float64, k int, additive bool) []Match {
	if len(server) == 0 || w == 0 {
		return ranked[:min(k, len(ranked))]
	}
	out := slices.Clone(ranked)
	for i := range out {
		s := server[out[i].Tool.Server]
		if additive {
			out[i].Score = (out[i].Score + w*s) / (1 + w)
		} else {
			out[i].Score *= (1 + w*s) / (1 + w)
		}
	}
	sortMatches(out)
	return out[:min(k, len(out))]
}

// sortMatches orders matches best first, ties by name.
func sortMatches(ms []Match) {
	slices.SortStableFunc(ms, func(a, b Match) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Tool.Name, b.Tool.Name)
	})
}
