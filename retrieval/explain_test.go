package retrieval_test

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/retrieval"
)

// Explain's fused ranking is the one Retrieve takes its matches from:
// same tools, same scores, whatever the depth of the lists.
func TestExplainAgreesWithRetrieve(t *testing.T) {
	ix := newIndex(t)
	ctx := context.Background()
	for _, o := range []retrieval.Options{
		{K: 5, Depth: 8},
		{K: 3, Depth: 5, Pinned: []string{"mail__send_email"}},
		{K: 4, Mode: retrieval.Lexical},
		{K: 6, MinScore: 0.5},
	} {
		r := newRetriever(t, ix, &o)
		q := retrieval.Query{Task: "What is the weather in Paris? Then email it to Ann.", Used: []string{"weather__get_current"}}
		got, err := r.Retrieve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := r.Explain(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var want, fromEx []string
		wantScore := map[string]float64{}
		for _, m := range got {
			if !m.Pinned && !m.Sticky {
				want = append(want, m.Tool.Name)
				wantScore[m.Tool.Name] = m.Score
			}
		}
		for _, m := range ex.Ranked {
			tr := ex.Tool(m.Tool.Name)
			if tr.Retrieved {
				fromEx = append(fromEx, m.Tool.Name)
				// fuse sums a tool's contributions in map order: the last
				// bits may differ between two calls.
				if math.Abs(tr.Score-wantScore[m.Tool.Name]) > 1e-12 {
					t.Errorf("%+v: %s scores %v in Explain, %v in Retrieve", o, m.Tool.Name, tr.Score, wantScore[m.Tool.Name])
				}
			}
		}
		if diff := cmp.Diff(want, fromEx); diff != "" {
			t.Errorf("%+v: retrieved (-Retrieve +Explain):\n%s", o, diff)
		}
		if tr := ex.Tool("weather__get_current"); !tr.Sticky || tr.Retrieved {
			t.Errorf("%+v: weather__get_current is used: %+v", o, tr)
		}
		// One ranking per signal, each consistent with the fused one: a
		// tool some signal ranks is in the fused ranking.
		for _, s := range ex.Signals {
			for _, m := range s.Ranked[:min(len(s.Ranked), 3)] {
				if ex.Tool(m.Tool.Name).Rank == 0 {
					t.Errorf("%+v: %s ranks in %v but not fused", o, m.Tool.Name, s.Signal)
				}
			}
		}
		if o.Mode == retrieval.Lexical && (len(ex.Signals) != 1 || ex.Signals[0].Signal != retrieval.Lexical) {
			t.Errorf("lexical mode explains signals %+v", ex.Signals)
		}
	}
}

func TestExplainUnknownTool(t *testing.T) {
	r := newRetriever(t, newIndex(t), nil)
	ex, err := r.Explain(context.Background(), retrieval.Query{Task: "weather"})
	if err != nil {
		t.Fatal(err)
	}
	tr := ex.Tool("no_such_tool")
	if tr.Rank != 0 || tr.Retrieved || tr.Pinned || len(tr.Signals) != len(ex.Signals) {
		t.Errorf("%+v", tr)
	}
	for _, s := range tr.Signals {
		if s.Rank != 0 {
			t.Errorf("%+v", s)
		}
	}
}
