package benchmarks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/philippgille/chromem-go"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/encoder"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

var sizes = []int{1000, 10000, 100000}

const seed = 42

// corpus is one size's synthetic tools, their vectors and a built index,
// made once per process and shared by the benchmarks that only read them.
type corpus struct {
	tools   []tool.Tool
	vectors [][]float32
	ix      *toolindex.Index
}

var (
	corporaMu sync.Mutex
	corpora   = map[int]*corpus{}
)

func localEmbedder(b *testing.B) *toolindex.LocalEmbedder {
	emb, err := toolindex.NewLocalEmbedder(nil)
	if err != nil {
		b.Fatal(err)
	}
	return emb
}

var (
	useOnce sync.Once
	useEnc  *encoder.USE
	useErr  error
)

// semantic returns the default semantic embedder, Universal Sentence
// Encoder Lite, shared by the benchmarks.
func semantic(b *testing.B) *encoder.USE {
	useOnce.Do(func() { useEnc, useErr = encoder.NewUSE(nil) })
	if useErr != nil {
		b.Fatal(useErr)
	}
	return useEnc
}

// defaultIndexOptions are the index options of toolsift.Open's defaults:
// the local embedder's vectors beside USE's.
func defaultIndexOptions(b *testing.B) *toolindex.Options {
	return &toolindex.Options{Semantic: semantic(b)}
}

// getCorpus returns n synthetic tools indexed as toolsift.Open indexes them
// by default (BM25F, local vectors, USE vectors). Embedding 100,000 tools
// with USE takes about a minute of CPU, once per process.
func getCorpus(b *testing.B, n int) *corpus {
	corporaMu.Lock()
	defer corporaMu.Unlock()
	if c, ok := corpora[n]; ok {
		return c
	}
	ctx := context.Background()
	emb := localEmbedder(b)
	c := &corpus{tools: synthTools(n, seed)}
	docs := make([]string, n)
	for i, t := range c.tools {
		docs[i] = toolindex.Document(t)
	}
	var err error
	if c.vectors, err = emb.Embed(ctx, docs); err != nil {
		b.Fatal(err)
	}
	if c.ix, err = toolindex.New(emb, defaultIndexOptions(b)); err != nil {
		b.Fatal(err)
	}
	if _, err := c.ix.Upsert(ctx, c.tools...); err != nil {
		b.Fatal(err)
	}
	corpora[n] = c
	return c
}

func tokenizer(b *testing.B) *budget.Tokenizer {
	tok, err := budget.NewTokenizer("gpt-4o", "")
	if err != nil {
		b.Fatal(err)
	}
	return tok
}

// BenchmarkRetrieve is one Think step (think.Thinker, the agent's own, with
// its defaults): embed the step's query with the local embedder and USE,
// hybrid search over BM25F and both vector signals, fit the best into the
// token budget, add search_tools.
func BenchmarkRetrieve(b *testing.B) {
	tok := tokenizer(b)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			c := getCorpus(b, n)
			th, err := think.New(c.ix, &think.Options{Tokenizer: tok})
			if err != nil {
				b.Fatal(err)
			}
			// The catalog's cost is counted once per index generation, as
			// toolsift.Open does before the first step (or takes it from
			// its cache): a step's own cost is what is measured.
			th.CatalogCost()
			queries := synthQueries(256, seed)
			ctx := context.Background()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: queries[i%len(queries)]}}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkChromemQuery is plain chromem-go QueryEmbedding on the same
// vectors, top 20, with the query embedded outside the loop: the floor
// under BenchmarkRetrieve.
func BenchmarkChromemQuery(b *testing.B) {
	ctx := context.Background()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			c := getCorpus(b, n)
			db := chromem.NewDB()
			col, err := db.CreateCollection("tools", nil, func(context.Context, string) ([]float32, error) {
				return nil, fmt.Errorf("no embedding at query time")
			})
			if err != nil {
				b.Fatal(err)
			}
			docs := make([]chromem.Document, n)
			for i, t := range c.tools {
				docs[i] = chromem.Document{ID: t.Name, Embedding: c.vectors[i]}
			}
			if err := col.AddDocuments(ctx, docs, 4); err != nil {
				b.Fatal(err)
			}
			qv, err := localEmbedder(b).Embed(ctx, synthQueries(256, seed))
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := col.QueryEmbedding(ctx, qv[i%len(qv)], 20, nil, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkIndexBuild embeds and indexes n tools from scratch: with the
// local embedder alone, and with USE beside it (the default; 1,000 and
// 10,000 tools: at 100,000 one iteration takes a minute).
func BenchmarkIndexBuild(b *testing.B) {
	ctx := context.Background()
	for _, sem := range []bool{false, true} {
		for _, n := range sizes {
			if sem && n > 10000 {
				continue
			}
			b.Run(fmt.Sprintf("semantic=%v/tools=%d", sem, n), func(b *testing.B) {
				tools := synthTools(n, seed)
				emb := localEmbedder(b)
				var opts *toolindex.Options
				if sem {
					opts = defaultIndexOptions(b)
				}
				b.ReportAllocs()
				for b.Loop() {
					ix, err := toolindex.New(emb, opts)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := ix.Upsert(ctx, tools...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tools/s")
			})
		}
	}
}

// BenchmarkWarmStart loads a persisted index of n tools: what a restart
// costs instead of re-embedding.
func BenchmarkWarmStart(b *testing.B) {
	ctx := context.Background()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			c := getCorpus(b, n)
			dir := b.TempDir()
			if err := c.ix.Save(dir); err != nil {
				b.Fatal(err)
			}
			emb := localEmbedder(b)
			opts := defaultIndexOptions(b)
			b.ReportAllocs()
			for b.Loop() {
				ix, err := toolindex.Load(ctx, dir, emb, opts)
				if err != nil {
					b.Fatal(err)
				}
				if ix.Len() != n {
					b.Fatalf("loaded %d tools, want %d", ix.Len(), n)
				}
			}
		})
	}
}

// BenchmarkTokenize counts the tokens of real tool schemas.
func BenchmarkTokenize(b *testing.B) {
	tok := tokenizer(b)
	var texts []string
	var bytes int64
	for _, t := range synthTools(200, seed) {
		s := t.Description + " " + string(t.InputSchema)
		texts = append(texts, s)
		bytes += int64(len(s))
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	tokens := 0
	for b.Loop() {
		tokens = 0
		for _, s := range texts {
			tokens += tok.Count(s)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkSelect fits ranked candidates into the budget.
func BenchmarkSelect(b *testing.B) {
	tok := tokenizer(b)
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			tools := synthTools(n, seed)
			cands := make([]budget.Candidate, n)
			for i, t := range tools {
				cands[i] = budget.Candidate{Tool: t, Score: 1 / float64(i+1)}
			}
			if _, err := budget.Select(tok, cands, budget.Budget{Tokens: think.DefaultBudget}); err != nil {
				b.Fatal(err) // also warms the render cache, as a running agent has it
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := budget.Select(tok, cands, budget.Budget{Tokens: think.DefaultBudget}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecall reports retrieval quality on the shared datasets as
// benchmark metrics: recall@5 and nDCG@10 of the default hybrid retriever,
// the gold recall kept within the token budget, and the token reduction
// against offering every tool, over every query. ns/op is one query's
// Think-step selection.
func BenchmarkRecall(b *testing.B) {
	for _, name := range []string{"bfcl", "sealtools"} {
		b.Run("dataset="+name, func(b *testing.B) {
			dir := filepath.Join("..", "..", "shared", "datasets", name)
			if _, err := os.Stat(dir); err != nil {
				b.Skipf("dataset %s not present beside the checkout: %v", dir, err)
			}
			tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			queries, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			ix, err := toolindex.New(localEmbedder(b), defaultIndexOptions(b))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ix.Upsert(ctx, tools...); err != nil {
				b.Fatal(err)
			}
			tok := tokenizer(b)
			all := 0
			for _, t := range tools {
				r, err := tok.CountTool(t, budget.TierFull)
				if err != nil {
					b.Fatal(err)
				}
				all += r.Tokens
			}
			th, err := think.New(ix, &think.Options{Tokenizer: tok})
			if err != nil {
				b.Fatal(err)
			}
			// step is one query's Think step, as the agent takes it.
			step := func(q dataset.Query) (ranked, selected []string, tokens int) {
				off, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: q.Query}})
				if err != nil {
					b.Fatal(err)
				}
				ranked = make([]string, len(off.Ranked))
				for i, m := range off.Ranked {
					ranked[i] = m.Tool.Name
				}
				return ranked, off.Names(), off.Tokens
			}
			// Quality over every query, once; the loop below times steps.
			var recall5, ndcg, kept, selTokens float64
			for _, q := range queries {
				ranked, selected, tokens := step(q)
				g := q.Groups()
				recall5 += retrieval.Recall(ranked, g, 5)
				ndcg += retrieval.NDCG(ranked, g, 10)
				kept += retrieval.Recall(selected, g, len(selected))
				selTokens += float64(tokens)
			}
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				step(queries[n%len(queries)])
				n++
			}
			f := float64(len(queries))
			b.ReportMetric(recall5/f, "recall@5")
			b.ReportMetric(ndcg/f, "nDCG@10")
			b.ReportMetric(kept/f, "budget-recall")
			b.ReportMetric(selTokens/f, "tokens/step")
			b.ReportMetric(100*(1-selTokens/f/float64(all)), "%reduction")
		})
	}
}
