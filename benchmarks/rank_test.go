//go:build datasets

package benchmarks_test

// The measurement of issue 26's ranking ideas, each alone and together, on
// the public sets and the paraphrase sets (docs/measurements.md, "Server,
// intent and budget-aware ranking"). Run it with
//
//	go test -tags datasets -run RankIdeas -v -timeout 60m ./benchmarks/
//
// The datasets are read from $TOOLSIFT_SHARED (default ../../shared, the
// shared folder beside the checkout); tool vectors are cached in
// $TOOLSIFT_RANK_CACHE (default the user cache folder's toolsift).
// RANK_SETS picks sets by name (comma-separated; default all),
// RANK_VARIANTS variants (default all). With RANK_CEILING=1 each set also
// reports how far any fusion of today's signals could go: the share of
// requests for which some signal alone (BM25F, the n-gram vectors or the
// sentence encoder, from Retriever.Explain) ranks a gold tool in its top 3
// and top 10, the reach of a rule that knew the answer and picked the best
// signal per request (not a strict bound: a fusion can rank first a tool
// that every signal ranks fourth, so it also reports how often the fused
// top 3 has a gold tool that no signal has in its own); and RANK_MISSES=DIR writes each set's requests
// without a gold tool in the fused top 3 to DIR/SET.txt, with every gold
// tool's fused and per-signal ranks.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
	"github.com/toolsift/toolsift/internal/hashcache"
	"github.com/toolsift/toolsift/internal/rankopt"
	"github.com/toolsift/toolsift/internal/textproc"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

type rankSet struct {
	name           string
	tools, queries string // paths; tools under $TOOLSIFT_SHARED unless absolute
	qualified      bool
	// heldout keeps only the queries numbered 0, 4, 8, ...: those that
	// TestFitAssociations never saw.
	heldout bool
}

// rankVariant changes the default Think options; a variant named in
// bm25Variants changes the lexical index's field weights instead (the
// index is built again with them).
type rankVariant struct {
	name string
	set  func(*think.Options)
}

var rankVariants = []rankVariant{
	{"default", func(*think.Options) {}},
	// The default before issue 26 made ServerWeight 0.5 the default.
	{"previous", func(o *think.Options) { o.Retrieval.NoServerWeight = true }},
	// The weights TestFitWeights fitted on the public train quarters.
	{"fitted", func(o *think.Options) { o.Retrieval.Weights = retrieval.Weights{Lexical: 1, Vector: 1, Semantic: 0.25} }},
	{"server0.25", func(o *think.Options) { o.Retrieval.ServerWeight = 0.25 }},
	{"server0.5", func(o *think.Options) { o.Retrieval.ServerWeight = 0.5 }},
	{"server1", func(o *think.Options) { o.Retrieval.ServerWeight = 1 }},
	{"intents1", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{IntentQuota: 1}) }},
	{"intents2", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{IntentQuota: 2}) }},
	{"intents3", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{IntentQuota: 3}) }},
	{"k30", func(o *think.Options) { o.Retrieval.K = 30 }},
	{"k40", func(o *think.Options) { o.Retrieval.K = 40 }},
	// Budget packing (think.Options.Pack): 10 or 20 more candidates than
	// K, ranked as deep as at K = 20, so the ranking itself does not move.
	{"pack10", func(o *think.Options) { o.Pack = 10 }},
	{"pack20", func(o *think.Options) { o.Pack = 20 }},
	{"pack30", func(o *think.Options) { o.Pack = 30 }},
	{"pack40", func(o *think.Options) { o.Pack = 40 }},
	{"server0.5+pack20", func(o *think.Options) { o.Retrieval.ServerWeight = 0.5; o.Pack = 20 }},
	{"server0.5+intents2+pack20", func(o *think.Options) {
		o.Retrieval.ServerWeight, o.Pack = 0.5, 20
		rankopt.Set(&o.Retrieval, rankopt.Features{IntentQuota: 2})
	}},
	{"server0.5+k30", func(o *think.Options) { o.Retrieval.ServerWeight = 0.5; o.Retrieval.K = 30 }},
	{"server0.25+intents2", func(o *think.Options) {
		o.Retrieval.ServerWeight = 0.25
		rankopt.Set(&o.Retrieval, rankopt.Features{IntentQuota: 2})
	}},
	{"server0.5+intents2", func(o *think.Options) {
		o.Retrieval.ServerWeight = 0.5
		rankopt.Set(&o.Retrieval, rankopt.Features{IntentQuota: 2})
	}},
	// Pseudo-relevance feedback (rankopt.Features.Feedback).
	{"feedback3", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{Feedback: 3}) }},
	{"feedback5", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{Feedback: 5}) }},
	{"feedback3+pack20", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{Feedback: 3}); o.Pack = 20 }},
	// The fitted word associations (rankopt.Features.Associate).
	{"assoc0.25", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{Associate: 0.25}) }},
	{"assoc0.5", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{Associate: 0.5}) }},
	{"assoc1", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{Associate: 1}) }},
	// Issue 36: the ranking before the semantic signal's confident best
	// was kept in the top 3, and long descriptions searched in windows.
	{"noreach", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{NoReach: true}) }},
	{"reach1", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{ReachRank: 1}) }},
	{"reach2", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{ReachRank: 2}) }},
	{"reach3", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{ReachRank: 3}) }},
	{"windows1", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{WindowWeight: 1}) }},
	{"windows0.5", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{WindowWeight: 0.5}) }},
	{"windows0.6", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{WindowWeight: 0.6}) }},
	{"windows0.7", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{WindowWeight: 0.7}) }},
	{"windows0.8", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{WindowWeight: 0.8}) }},
	// Issue 36, third round: the server lift added to a tool's score, the
	// default before (ServerWeight 0.5), and today's lift, in proportion
	// to the tool's score, at other weights.
	{"addlift", func(o *think.Options) {
		o.Retrieval.ServerWeight = 0.5
		rankopt.Set(&o.Retrieval, rankopt.Features{AdditiveLift: true, ServerLexical: true})
	}},
	{"lift0.5", func(o *think.Options) { o.Retrieval.ServerWeight = 0.5 }},
	{"lift0.75", func(o *think.Options) { o.Retrieval.ServerWeight = 0.75 }},
	{"lift1.5", func(o *think.Options) { o.Retrieval.ServerWeight = 1.5 }},
	// The server documents ranked with BM25F too (the default before),
	// with today's proportional lift.
	{"srv-lex", func(o *think.Options) { rankopt.Set(&o.Retrieval, rankopt.Features{ServerLexical: true}) }},
	// The tools left out listed by name (think.Options.Listing; off by
	// default: the gold sent with its schema falls with it).
	{"nolisting", func(o *think.Options) { o.Listing = false }},
	{"listing", func(o *think.Options) { o.Listing = true }},
	{"bm25-name1", nil},
	{"bm25-name3", nil},
	{"bm25-params0.25", nil},
	{"bm25-params1", nil},
	{"bm25-desc2", nil},
	{"sem-fulldesc", nil},
	{"sem-params", nil},
	{"sem-server", nil},
}

// semVariants change what the sentence encoder reads of a tool (by
// default its name words and the first 256 bytes of its description,
// toolindex.SemanticDocument): the index is built again with an encoder
// that reads the variant's text instead.
var semVariants = map[string]func(tool.Tool) string{
	// the whole description
	"sem-fulldesc": func(t tool.Tool) string {
		return joinText(toolindex.DocumentFields(t).Name, t.Description)
	},
	// the default text, then the parameters' names
	"sem-params": func(t tool.Tool) string {
		return joinText(toolindex.SemanticDocument(t), paramNames(t))
	},
	// the default text, then the server's name
	"sem-server": func(t tool.Tool) string {
		return joinText(toolindex.SemanticDocument(t), toolindex.DocumentFields(t).Server)
	},
}

// bm25Variants are BM25F field weights to measure (default name 2,
// description 1, parameters 0.5; ScaleMCP weighs a tool's fields).
var bm25Variants = map[string]toolindex.BM25{
	"bm25-name1":      {NameWeight: 1, DescriptionWeight: 1, ParamsWeight: 0.5},
	"bm25-name3":      {NameWeight: 3, DescriptionWeight: 1, ParamsWeight: 0.5},
	"bm25-params0.25": {NameWeight: 2, DescriptionWeight: 1, ParamsWeight: 0.25},
	"bm25-params1":    {NameWeight: 2, DescriptionWeight: 1, ParamsWeight: 1},
	"bm25-desc2":      {NameWeight: 2, DescriptionWeight: 2, ParamsWeight: 0.5},
}

func TestRankIdeas(t *testing.T) {
	shared := os.Getenv("TOOLSIFT_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared")
	}
	sets := []rankSet{
		{"paraphrase-mcp", "mcp/catalog.jsonl", "testdata/paraphrase/mcp/queries.jsonl", true, false},
		{"paraphrase-bfcl", "datasets/bfcl/tools.jsonl", "testdata/paraphrase/bfcl/queries.jsonl", false, false},
		{"multi-mcp", "mcp/catalog.jsonl", "testdata/paraphrase/multi/queries.jsonl", true, false},
		{"mcp-32", "mcp/catalog.jsonl", "testdata/catalog_queries.jsonl", true, false},
		{"everyday-cat", "mcp/catalog.jsonl", "testdata/everyday/catalog/queries.jsonl", true, false},
		{"everyday-ref", "testdata/everyday/reference/tools.jsonl", "testdata/everyday/reference/queries.jsonl", false, false},
		// The held-out everyday set (testdata/everyday/heldout), written blind
		// after the sets above had been used to tune the ranking.
		{"heldout-cat", "mcp/catalog.jsonl", "testdata/everyday/heldout/catalog/queries.jsonl", true, false},
		{"heldout-ref", "testdata/everyday/reference/tools.jsonl", "testdata/everyday/heldout/reference/queries.jsonl", false, false},
	}
	for _, n := range []string{"azuremcp", "restbench", "bfcl", "stabletoolbench", "sealtools"} {
		sets = append(sets, rankSet{n, "datasets/" + n + "/tools.jsonl", filepath.Join(shared, "datasets", n, "queries.jsonl"), false, false})
	}
	for _, n := range []string{"stabletoolbench", "sealtools"} {
		sets = append(sets, rankSet{n + "-heldout", "datasets/" + n + "/tools.jsonl", filepath.Join(shared, "datasets", n, "queries.jsonl"), false, true})
	}
	only := func(env, name string) bool {
		v := os.Getenv(env)
		return v == "" || slices.Contains(strings.Split(v, ","), name)
	}
	cache := os.Getenv("TOOLSIFT_RANK_CACHE")
	ctx := context.Background()
	for _, s := range sets {
		if !only("RANK_SETS", s.name) {
			continue
		}
		path := filepath.Join(shared, s.tools)
		if strings.HasPrefix(s.tools, "testdata/") {
			path = s.tools // in the repository
		}
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: skipped, %v", s.name, err)
			continue
		}
		var tools []tool.Tool
		var err error
		if s.qualified {
			tools, _, err = dataset.LoadToolsQualified(path, upstream.QualifiedName)
		} else {
			tools, err = dataset.LoadTools(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		queries, err := dataset.LoadQueries(s.queries)
		if err != nil {
			t.Fatal(err)
		}
		if s.heldout {
			var qs []dataset.Query
			for i := 0; i < len(queries); i += 4 {
				qs = append(qs, queries[i])
			}
			queries = qs
		}
		st := storeIn(t, cache)
		step := newStep(t, st)
		ts, err := toolsift.New(ctx, tools, &toolsift.Options{Thinker: step, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		base := step.Options()
		for _, v := range rankVariants {
			if !only("RANK_VARIANTS", v.name) {
				continue
			}
			o := base
			if v.set != nil {
				v.set(&o)
			}
			ix := step.Index()
			if b, ok := bm25Variants[v.name]; ok {
				ix = reindex(t, ix, tools, cache, b, nil)
			}
			if f, ok := semVariants[v.name]; ok {
				ix = reindex(t, ix, tools, cache, toolindex.BM25{}, newTextMap(v.name, step.Index().Semantic(), tools, f))
			}
			th, err := think.New(ix, &o)
			if err != nil {
				t.Fatal(err)
			}
			// The same step with half the default budget: the ranking is
			// the same, the selection is not.
			o2 := o
			o2.Budget = think.DefaultBudget / 2
			th2, err := think.New(ix, &o2)
			if err != nil {
				t.Fatal(err)
			}
			// kept is the gold recall of what a step sends: with its schema
			// (callable at once) and listed (budget.TierName: the name and
			// a line, its schema a search_tools step away), and their sum;
			// before listings every tool sent had its schema.
			var r5, h1, h3, c5, c10, complete, tokens, tokens2, cut, unranked, ceil3, ceil10, beyond float64
			var misses strings.Builder
			var kept, kept2 sentRecall
			for _, q := range queries {
				req := think.Request{Query: retrieval.Query{Task: q.Query}}
				off, err := th.Think(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				off2, err := th2.Think(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				ranked := make([]string, len(off.Ranked))
				for i, m := range off.Ranked {
					ranked[i] = m.Tool.Name
				}
				g := q.Groups()
				sel := off.Names()
				r5 += evalmetric.Recall(ranked, g, 5)
				h1 += evalmetric.Hit(ranked, g, 1)
				h3 += evalmetric.Hit(ranked, g, 3)
				c5 += evalmetric.Complete(ranked, g, 5)
				c10 += evalmetric.Complete(ranked, g, 10)
				kept.add(off, g)
				kept2.add(off2, g)
				if os.Getenv("RANK_CEILING") != "" || os.Getenv("RANK_MISSES") != "" {
					b3, b10 := signalCeiling(t, th, q, ranked, &misses)
					ceil3 += b3
					ceil10 += b10
					if b3 == 0 && evalmetric.Hit(ranked, g, 3) == 1 {
						beyond++
					}
				}
				complete += evalmetric.Complete(sel, g, len(sel))
				tokens += float64(off.Tokens)
				tokens2 += float64(off2.Tokens)
				// Where the gold kept out of the request went: ranked among
				// the K but cut by the budget, or not ranked that high.
				for _, grp := range g {
					if slices.ContainsFunc(grp, func(n string) bool { return slices.Contains(sel, n) }) {
						continue
					}
					if slices.ContainsFunc(grp, func(n string) bool { return slices.Contains(ranked, n) }) {
						cut += 1 / float64(len(g))
					} else {
						unranked += 1 / float64(len(g))
					}
				}
			}
			n := float64(len(queries))
			t.Logf("%-16s %-20s recall@5 %.3f  hit@1 %.3f  hit@3 %.3f  complete@5 %.3f  complete@10 %.3f  gold-in-budget with schema %.3f + listed %.3f = %.3f (2k: %.3f + %.3f = %.3f)  complete-in-budget %.3f  tokens %.0f (2k: %.0f)  gold cut by budget %.3f, not in top K %.3f",
				s.name, v.name, r5/n, h1/n, h3/n, c5/n, c10/n, kept.schema/n, kept.listed/n, kept.total()/n, kept2.schema/n, kept2.listed/n, kept2.total()/n, complete/n, tokens/n, tokens2/n, cut/n, unranked/n)
			if os.Getenv("RANK_CEILING") != "" {
				t.Logf("%-16s %-20s hit@3 %.3f; some signal alone has a gold tool in its top 3: %.3f, top 10: %.3f; the fusion's top 3 has a gold tool no signal has in its own: %.3f",
					s.name, v.name, h3/n, ceil3/n, ceil10/n, beyond/n)
			}
			if dir := os.Getenv("RANK_MISSES"); dir != "" {
				if err := os.WriteFile(filepath.Join(dir, s.name+"-"+v.name+".txt"), []byte(misses.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		ts.Close()
	}
}

// signalCeiling explains q's ranking (th's retriever, the step's options)
// and reports whether some signal alone ranks a gold tool in its top 3 and
// in its top 10 (1 or 0 each). When the fused ranking has no gold tool in
// its top 3, it writes the request, every gold tool's fused and per-signal
// ranks, and the fused top 3 to misses.
func signalCeiling(t *testing.T, th *think.Thinker, q dataset.Query, ranked []string, misses *strings.Builder) (top3, top10 float64) {
	t.Helper()
	ex, err := th.Retriever().Explain(context.Background(), retrieval.Query{Task: q.Query})
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for _, g := range q.Gold {
		for _, sr := range ex.Tool(g).Signals {
			if sr.Rank > 0 && (best == 0 || sr.Rank < best) {
				best = sr.Rank
			}
		}
	}
	if best > 0 && best <= 3 {
		top3 = 1
	}
	if best > 0 && best <= 10 {
		top10 = 1
	}
	if evalmetric.Hit(ranked, q.Groups(), 3) == 1 {
		return top3, top10
	}
	fmt.Fprintf(misses, "%s | %s\n", q.ID, q.Query)
	for _, g := range q.Gold {
		tr := ex.Tool(g)
		fmt.Fprintf(misses, "   gold %s: fused #%d %.3f", g, tr.Rank, tr.Score)
		for _, sr := range tr.Signals {
			fmt.Fprintf(misses, ", %v #%d %.2f", sr.Signal, sr.Rank, sr.Score)
		}
		misses.WriteString("\n")
	}
	for i := 0; i < 3 && i < len(ex.Ranked); i++ {
		fmt.Fprintf(misses, "   #%d %s %.3f\n", i+1, ex.Ranked[i].Tool.Name, ex.Ranked[i].Score)
	}
	return top3, top10
}

// sentRecall sums, over steps, the gold recall of what a step sends, split
// by how: with its schema, callable at once, or listed (budget.TierName),
// the name and a line, callable after a search_tools step. A group counts
// with its schema when any of its tools has one.
type sentRecall struct{ schema, listed float64 }

func (r *sentRecall) add(off think.Offer, g [][]string) {
	all, schema := off.Names(), off.WithSchema()
	s := evalmetric.Recall(schema, g, len(schema))
	r.schema += s
	r.listed += evalmetric.Recall(all, g, len(all)) - s
}

func (r sentRecall) total() float64 { return r.schema + r.listed }

// reindex builds an index of tools like like (same embedders, same vector
// cache) with other BM25F parameters or, when sem is not nil, another
// semantic embedder.
func reindex(t *testing.T, like *toolindex.Index, tools []tool.Tool, cache string, b toolindex.BM25, sem toolindex.Embedder) *toolindex.Index {
	t.Helper()
	if cache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(d, "toolsift")
	}
	if sem == nil {
		sem = like.Semantic()
	}
	st, err := store.NewDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(like.Embedder(), &toolindex.Options{Semantic: sem, BM25: b,
		Cache: hashcache.New(st)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Upsert(context.Background(), tools...); err != nil {
		t.Fatal(err)
	}
	return ix
}

// textMap is a semantic embedder that reads, for a tool's
// SemanticDocument, the variant's text of that tool instead; any other
// text (a query) is embedded as it is. Its ID names the variant, so that
// its vectors are cached apart.
type textMap struct {
	name string
	emb  toolindex.Embedder
	m    map[string]string // SemanticDocument → the variant's text
}

func newTextMap(name string, emb toolindex.Embedder, tools []tool.Tool, text func(tool.Tool) string) *textMap {
	m := make(map[string]string, len(tools))
	for _, t := range tools {
		m[toolindex.SemanticDocument(t)] = text(t)
	}
	return &textMap{name, emb, m}
}

func (e *textMap) ID() string { return e.emb.ID() + "+" + e.name }

func (e *textMap) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	in := make([]string, len(texts))
	for i, s := range texts {
		in[i] = s
		if v, ok := e.m[s]; ok {
			in[i] = v
		}
	}
	return e.emb.Embed(ctx, in)
}

func joinText(a, b string) string {
	return strings.TrimSpace(strings.TrimSpace(a) + "\n\n" + strings.TrimSpace(b))
}

// paramNames returns the words of t's top-level parameter names.
func paramNames(t tool.Tool) string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(t.InputSchema, &schema) != nil {
		return ""
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(schema.Properties)) {
		out = append(out, strings.Join(textproc.Words(n), " "))
	}
	return strings.Join(out, ", ")
}
