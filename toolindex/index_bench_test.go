package toolindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
)

// Benchmarks of the index on the public datasets (../shared/datasets, or
// TOOLSIFT_DATASETS) and on synthetic catalogs up to 100,000 tools:
//
//	go test -run '^$' -bench . -benchtime 20x ./toolindex/

func datasetDir(tb testing.TB, name string) string {
	tb.Helper()
	root := os.Getenv("TOOLSIFT_DATASETS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "datasets")
	}
	dir := filepath.Join(root, name)
	if _, err := os.Stat(filepath.Join(dir, "tools.jsonl")); err != nil {
		// The shared datasets are an optional input beside the checkout.
		tb.Skipf("dataset %s not found (%v); set TOOLSIFT_DATASETS", name, err)
	}
	return dir
}

func loadDataset(tb testing.TB, name string) ([]tool.Tool, []dataset.Query) {
	tb.Helper()
	dir := datasetDir(tb, name)
	tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	queries, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	return tools, queries
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkBuild builds an index of a whole dataset with the local
// embedder and reports the heap the index keeps.
func BenchmarkBuild(b *testing.B) {
	for _, name := range []string{"bfcl", "sealtools"} {
		b.Run(name, func(b *testing.B) {
			tools, _ := loadDataset(b, name)
			emb, err := toolindex.NewLocalEmbedder(nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var heap float64
			for b.Loop() {
				before := heapInUse()
				ix, err := toolindex.New(emb, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ix.Upsert(context.Background(), tools...); err != nil {
					b.Fatal(err)
				}
				heap = float64(heapInUse()-before) / (1 << 20)
				runtime.KeepAlive(ix)
			}
			b.ReportMetric(float64(len(tools)), "tools")
			b.ReportMetric(heap, "MB-heap")
		})
	}
}

// BenchmarkLoad measures a warm start: Load of a saved dataset index
// (vectors read from disk, lexical index rebuilt, nothing embedded).
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"bfcl", "sealtools"} {
		b.Run(name, func(b *testing.B) {
			tools, _ := loadDataset(b, name)
			emb, err := toolindex.NewLocalEmbedder(nil)
			if err != nil {
				b.Fatal(err)
			}
			ix, err := toolindex.New(emb, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := ix.Upsert(context.Background(), tools...); err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			start := time.Now()
			if err := ix.Save(dir); err != nil {
				b.Fatal(err)
			}
			saveMS := float64(time.Since(start).Microseconds()) / 1000
			b.ReportAllocs()
			for b.Loop() {
				got, err := toolindex.Load(context.Background(), dir, emb, nil)
				if err != nil {
					b.Fatal(err)
				}
				if got.Len() != len(tools) {
					b.Fatalf("loaded %d tools, want %d", got.Len(), len(tools))
				}
			}
			b.ReportMetric(saveMS, "save-ms")
		})
	}
}

// BenchmarkSearchDataset runs the dataset's queries through both searches
// and reports recall@5 (share of gold tools in the top 5).
func BenchmarkSearchDataset(b *testing.B) {
	for _, name := range []string{"bfcl", "sealtools"} {
		tools, queries := loadDataset(b, name)
		emb, err := toolindex.NewLocalEmbedder(nil)
		if err != nil {
			b.Fatal(err)
		}
		ix, err := toolindex.New(emb, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.Upsert(context.Background(), tools...); err != nil {
			b.Fatal(err)
		}
		texts := make([]string, len(queries))
		for i, q := range queries {
			texts[i] = q.Query
		}
		vecs, err := emb.Embed(context.Background(), texts)
		if err != nil {
			b.Fatal(err)
		}
		recall := func(search func(i int) []toolindex.Hit) float64 {
			var sum float64
			for i, q := range queries {
				top := map[string]bool{}
				for _, h := range search(i) {
					top[h.Tool.Name] = true
				}
				found := 0
				for _, g := range q.Gold {
					if top[g] {
						found++
					}
				}
				sum += float64(found) / float64(len(q.Gold))
			}
			return sum / float64(len(queries))
		}
		b.Run(name+"/lexical", func(b *testing.B) {
			r := recall(func(i int) []toolindex.Hit { return ix.SearchLexical(queries[i].Query, 5, nil) })
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ix.SearchLexical(queries[i%len(queries)].Query, 10, nil)
				i++
			}
			b.ReportMetric(r, "recall@5")
		})
		b.Run(name+"/vector", func(b *testing.B) {
			r := recall(func(i int) []toolindex.Hit {
				hits, err := ix.SearchVector(context.Background(), vecs[i], 5, nil)
				if err != nil {
					b.Fatal(err)
				}
				return hits
			})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.SearchVector(context.Background(), vecs[i%len(vecs)], 10, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(r, "recall@5")
		})
	}
}

// randomEmbedder gives each text a seeded pseudo-random unit vector: the
// scale benchmarks measure the index, not an embedder.
type randomEmbedder struct{ dim int }

func (e randomEmbedder) ID() string { return fmt.Sprintf("random:%d", e.dim) }
func (e randomEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		var seed uint64
		for _, c := range []byte(t) {
			seed = seed*131 + uint64(c)
		}
		r := rand.New(rand.NewPCG(seed, 7))
		v := make([]float32, e.dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// syntheticTools returns n tools whose words follow a Zipf law over a
// 5,000-word vocabulary, like real catalogs (many rare words, a few common).
func syntheticTools(n int) ([]tool.Tool, []string) {
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 2, uint64(len(vocab)-1))
	words := func(k int) string {
		var sb strings.Builder
		for j := range k {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(vocab[zipf.Uint64()])
		}
		return sb.String()
	}
	tools := make([]tool.Tool, n)
	for i := range tools {
		tools[i] = tool.Tool{
			Name:        fmt.Sprintf("srv%d__%s_%d", i%97, strings.ReplaceAll(words(2), " ", "_"), i),
			Description: words(12 + r.IntN(20)),
			InputSchema: []byte(fmt.Sprintf(`{"type":"object","properties":{"p%d":{"type":"string","description":%q}}}`, i%13, words(6))),
		}
	}
	queries := make([]string, 256)
	for i := range queries {
		queries[i] = words(8)
	}
	return tools, queries
}

// BenchmarkScale measures searches on synthetic catalogs of 1k to 100k
// tools (384-dimensional vectors).
func BenchmarkScale(b *testing.B) {
	const dim = 384
	for _, n := range []int{1_000, 10_000, 100_000} {
		tools, queries := syntheticTools(n)
		emb := randomEmbedder{dim}
		ix, err := toolindex.New(emb, &toolindex.Options{BatchSize: 1024})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.Upsert(context.Background(), tools...); err != nil {
			b.Fatal(err)
		}
		qvecs, _ := emb.Embed(context.Background(), queries)
		b.Run(fmt.Sprintf("lexical/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ix.SearchLexical(queries[i%len(queries)], 10, nil)
				i++
			}
		})
		b.Run(fmt.Sprintf("vector/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ix.SearchVector(context.Background(), qvecs[i%len(qvecs)], 10, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("upsert-one/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t := tools[i%len(tools)]
				t.Description += fmt.Sprintf(" v%d", i)
				if _, err := ix.Upsert(context.Background(), t); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
