//go:build datasets

package retrieval_test

// The quality measurement on the public datasets (docs/measurements.md,
// "Data and machine": a datasets folder beside the checkout, or
// TOOLSIFT_DATASETS). Run it with
//
//	go test -tags datasets -run Quality ./retrieval/ -v -timeout 30m
//
// It builds one Index per dataset with the local embedder and prints, for
// lexical only, vector only and hybrid (the default weighted sum, and
// RRF), the mean recall@1, @5, @10, hit@5, complete@10, nDCG@10 and MRR@10
// over all queries, with K = 10. MODES=lexical,hybrid limits the rows;
// TOOLSIFT_DATASETS names another datasets directory.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
	"github.com/toolsift/toolsift/internal/rankopt"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/toolindex"
)

// datasetsDir is where the datasets live by default, relative to this
// package: a folder beside the checkout (TOOLSIFT_DATASETS overrides it).
const datasetsDir = "../../shared/datasets"

type qualityRow struct {
	r1, r5, r10, hit5, comp10, ndcg, mrr float64
}

func TestQuality(t *testing.T) {
	for _, name := range []string{"bfcl", "sealtools"} {
		t.Run(name, func(t *testing.T) {
			base := datasetsDir
			if d := os.Getenv("TOOLSIFT_DATASETS"); d != "" {
				base = d
			}
			dir := filepath.Join(base, name)
			tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					if os.Getenv("CI") == "true" {
						t.Fatalf("dataset %s missing: %v", name, err)
					}
					t.Skipf("dataset %s not found (%v): skipping", name, err)
				}
				t.Fatal(err)
			}
			queries, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			emb, err := toolindex.NewLocalEmbedder(nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()

			docs := make([]string, len(tools))
			for i, tl := range tools {
				docs[i] = toolindex.Document(tl)
			}
			start := time.Now()
			if _, err := emb.Embed(ctx, docs); err != nil {
				t.Fatal(err)
			}
			embedDur := time.Since(start)

			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start = time.Now()
			ix, err := toolindex.New(emb, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ix.Upsert(ctx, tools...); err != nil {
				t.Fatal(err)
			}
			build := time.Since(start)
			var after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&after)
			saved := t.TempDir()
			if err := ix.Save(saved); err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			if _, err := toolindex.Load(ctx, saved, emb, nil); err != nil {
				t.Fatal(err)
			}
			load := time.Since(start)
			t.Logf("%s: %d tools, %d queries; embed %.0f docs/s (%s); index build %s, heap +%.1f MiB; warm-start Load %s",
				name, len(tools), len(queries), float64(len(docs))/embedDur.Seconds(), emb.ID(),
				build.Round(time.Millisecond), float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20),
				load.Round(time.Millisecond))

			type config = struct {
				label string
				opts  retrieval.Options
			}
			rrf := retrieval.Options{Mode: retrieval.Hybrid}
			rankopt.Set(&rrf, rankopt.Features{RRF: true})
			configs := []config{
				{"lexical", retrieval.Options{Mode: retrieval.Lexical}},
				{"vector", retrieval.Options{Mode: retrieval.Vector}},
				{"hybrid", retrieval.Options{}}, // the default: weighted sum
				{"hybrid rrf", rrf},
			}
			if m := os.Getenv("MODES"); m != "" {
				var keep []config
				for _, c := range configs {
					for _, want := range strings.Split(m, ",") {
						if want == c.label {
							keep = append(keep, c)
						}
					}
				}
				configs = keep
			}
			var b strings.Builder
			fmt.Fprintf(&b, "\n%-8s %-16s %6s %6s %6s %6s %6s %7s %6s\n", "dataset", "mode", "R@1", "R@5", "R@10", "hit@5", "cmp@10", "nDCG10", "MRR")
			for _, c := range configs {
				c.opts.K = 10
				r, err := retrieval.New(ix, &c.opts)
				if err != nil {
					t.Fatal(err)
				}
				var row qualityRow
				start := time.Now()
				for _, q := range queries {
					ms, err := r.Retrieve(ctx, retrieval.Query{Task: q.Query})
					if err != nil {
						t.Fatal(err)
					}
					ranked := make([]string, len(ms))
					for i, m := range ms {
						ranked[i] = m.Tool.Name
					}
					g := q.Groups()
					row.r1 += evalmetric.Recall(ranked, g, 1)
					row.r5 += evalmetric.Recall(ranked, g, 5)
					row.r10 += evalmetric.Recall(ranked, g, 10)
					row.hit5 += evalmetric.Hit(ranked, g, 5)
					row.comp10 += evalmetric.Complete(ranked, g, 10)
					row.ndcg += evalmetric.NDCG(ranked, g, 10)
					row.mrr += evalmetric.MRR(ranked, g)
				}
				per := time.Since(start) / time.Duration(len(queries))
				n := float64(len(queries))
				fmt.Fprintf(&b, "%-8s %-16s %6.3f %6.3f %6.3f %6.3f %6.3f %7.3f %6.3f  (%s/query)\n", name, c.label,
					row.r1/n, row.r5/n, row.r10/n, row.hit5/n, row.comp10/n, row.ndcg/n, row.mrr/n, per.Round(time.Microsecond))
			}
			t.Log(b.String())
		})
	}
}
