//go:build datasets

package benchmarks_test

// The fitting of Hybrid fusion's weights (retrieval.Weights) on public data
// only: a grid of round values, scored by mean recall@5 over every fourth
// query of sealtools and stabletoolbench (the "train" quarters, numbers
// 0, 4, 8, ...); the odd-numbered queries, the other public sets and the
// paraphrase sets are never seen by the fit and check it (TestRankIdeas's
// "fitted" variant). Run it with
//
//	TOOLSIFT_SHARED=../../shared go test -tags datasets -run FitWeights -v -timeout 60m ./benchmarks/
//
// BM25F's weight is fixed at 1: fusion is a weighted sum, so only the
// ratios count.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/retrieval"
)

// fitGrid are the weights the fit chooses among.
var fitGrid = struct{ vector, semantic []float64 }{
	vector:   []float64{0.25, 0.5, 1},
	semantic: []float64{0.25, 0.5, 0.75},
}

func TestFitWeights(t *testing.T) {
	shared := os.Getenv("TOOLSIFT_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared")
	}
	ctx := context.Background()
	type half struct {
		name string
		ts   *toolsift.Toolset
		qs   []dataset.Query
	}
	var halves []half
	for _, n := range []string{"sealtools", "stabletoolbench"} {
		dir := filepath.Join(shared, "datasets", n)
		tools, err := dataset.LoadTools(filepath.Join(dir, "tools.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		qs, err := dataset.LoadQueries(filepath.Join(dir, "queries.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var train []dataset.Query
		for i := 0; i < len(qs); i += 4 {
			train = append(train, qs[i])
		}
		ts, err := toolsift.New(ctx, tools, &toolsift.Options{CacheDir: os.Getenv("TOOLSIFT_RANK_CACHE")})
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		halves = append(halves, half{n, ts, train})
	}
	best, bestW := -1.0, retrieval.Weights{}
	for _, v := range fitGrid.vector {
		for _, s := range fitGrid.semantic {
			w := retrieval.Weights{Lexical: 1, Vector: v, Semantic: s}
			var mean float64
			line := fmt.Sprintf("lexical 1 vector %-4v semantic %-4v", v, s)
			for _, h := range halves {
				r, err := retrieval.New(h.ts.Index(), &retrieval.Options{K: 5, Weights: w})
				if err != nil {
					t.Fatal(err)
				}
				var r5 float64
				for _, q := range h.qs {
					ms, err := r.Retrieve(ctx, retrieval.Query{Task: q.Query})
					if err != nil {
						t.Fatal(err)
					}
					ranked := make([]string, len(ms))
					for i, m := range ms {
						ranked[i] = m.Tool.Name
					}
					r5 += retrieval.Recall(ranked, q.Groups(), 5)
				}
				r5 /= float64(len(h.qs))
				mean += r5 / float64(len(halves))
				line += fmt.Sprintf("  %s %.3f", h.name, r5)
			}
			t.Logf("%s  mean recall@5 %.4f", line, mean)
			if mean > best {
				best, bestW = mean, w
			}
		}
	}
	t.Logf("fitted: %+v (mean recall@5 %.4f on the train halves)", bestW, best)
}
