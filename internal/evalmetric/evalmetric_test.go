package evalmetric_test

import (
	"math"
	"testing"

	"github.com/toolsift/toolsift/internal/evalmetric"
)

func TestMetrics(t *testing.T) {
	// log2 discounts: position 1 → 1, 2 → 1/log2(3), 3 → 1/2, 4 → 1/log2(5).
	d2 := 1 / math.Log2(3)
	d4 := 1 / math.Log2(5)
	single := func(names ...string) [][]string {
		g := make([][]string, len(names))
		for i, n := range names {
			g[i] = []string{n}
		}
		return g
	}
	tests := []struct {
		name                   string
		ranked                 []string
		groups                 [][]string
		k                      int
		recall, hit, comp, mrr float64
		ndcg                   float64
	}{
		{
			name:   "one gold first",
			ranked: []string{"a", "b", "c"}, groups: single("a"), k: 1,
			recall: 1, hit: 1, comp: 1, mrr: 1, ndcg: 1,
		},
		{
			name:   "one gold third, k 2 misses it",
			ranked: []string{"x", "y", "a"}, groups: single("a"), k: 2,
			recall: 0, hit: 0, comp: 0, mrr: 1.0 / 3, ndcg: 0,
		},
		{
			name:   "one gold third, k 3",
			ranked: []string{"x", "y", "a"}, groups: single("a"), k: 3,
			recall: 1, hit: 1, comp: 1, mrr: 1.0 / 3, ndcg: 0.5,
		},
		{
			name:   "two golds at 2 and 4",
			ranked: []string{"x", "a", "y", "b"}, groups: single("a", "b"), k: 4,
			recall: 1, hit: 1, comp: 1, mrr: 0.5, ndcg: (d2 + d4) / (1 + d2),
		},
		{
			name:   "two golds, one in top 3",
			ranked: []string{"x", "a", "y", "b"}, groups: single("a", "b"), k: 3,
			recall: 0.5, hit: 1, comp: 0, mrr: 0.5, ndcg: d2 / (1 + d2),
		},
		{
			name:   "groups: any member satisfies, a second member adds nothing",
			ranked: []string{"a2", "a1", "b1"}, groups: [][]string{{"a1", "a2"}, {"b1", "b2"}, {"c1"}}, k: 3,
			recall: 2.0 / 3, hit: 1, comp: 0, mrr: 1, ndcg: (1 + 0.5) / (1 + d2 + 0.5),
		},
		{
			name:   "ideal is bounded by k",
			ranked: []string{"a", "b", "c"}, groups: single("a", "b", "c"), k: 2,
			recall: 2.0 / 3, hit: 1, comp: 0, mrr: 1, ndcg: 1,
		},
		{
			name:   "nothing relevant",
			ranked: []string{"x", "y"}, groups: single("a"), k: 10,
			recall: 0, hit: 0, comp: 0, mrr: 0, ndcg: 0,
		},
		{
			name:   "empty ranking",
			ranked: nil, groups: single("a"), k: 5,
		},
		{
			name:   "no groups",
			ranked: []string{"a"}, groups: nil, k: 5,
		},
		{
			name:   "k zero",
			ranked: []string{"a"}, groups: single("a"), k: 0,
			mrr: 1,
		},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := evalmetric.Recall(tt.ranked, tt.groups, tt.k); !near(got, tt.recall) {
				t.Errorf("Recall = %v, want %v", got, tt.recall)
			}
			if got := evalmetric.Hit(tt.ranked, tt.groups, tt.k); !near(got, tt.hit) {
				t.Errorf("Hit = %v, want %v", got, tt.hit)
			}
			if got := evalmetric.Complete(tt.ranked, tt.groups, tt.k); !near(got, tt.comp) {
				t.Errorf("Complete = %v, want %v", got, tt.comp)
			}
			if got := evalmetric.MRR(tt.ranked, tt.groups); !near(got, tt.mrr) {
				t.Errorf("MRR = %v, want %v", got, tt.mrr)
			}
			if got := evalmetric.NDCG(tt.ranked, tt.groups, tt.k); !near(got, tt.ndcg) {
				t.Errorf("NDCG = %v, want %v", got, tt.ndcg)
			}
		})
	}
}
