package retrieval_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/tool"
)

// TestKeepInReach: a signal's best below place n moves up to place n (the
// fused best stays first for n ≥ 2), scores stay in [0, 1] and descending,
// and nothing else moves.
func TestKeepInReach(t *testing.T) {
	ranked := func(n int) []retrieval.Match {
		out := make([]retrieval.Match, n)
		for i := range out {
			out[i] = retrieval.Match{Tool: tool.Tool{Name: fmt.Sprintf("t%d", i)}, Score: 1 - float64(i)/10}
		}
		return out
	}
	for _, c := range []struct {
		n    int
		tops []string
		want []string // nil: unchanged
	}{
		{2, []string{"t7"}, []string{"t0", "t7", "t1", "t2", "t3", "t4", "t5", "t6", "t8", "t9"}},
		{3, []string{"t7"}, []string{"t0", "t1", "t7", "t2", "t3", "t4", "t5", "t6", "t8", "t9"}},
		{1, []string{"t7"}, []string{"t7", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t8", "t9"}},
		{3, []string{"t1"}, nil}, // already in reach: unchanged
		{3, nil, nil},
		{3, []string{"absent"}, nil},
	} {
		got := retrieval.KeepInReach(ranked(10), c.tops, c.n)
		want := c.want
		if want == nil { // unchanged
			want = names(ranked(10))
		}
		if diff := cmp.Diff(want, names(got)); diff != "" {
			t.Errorf("n %d, tops %v (-want +got):\n%s", c.n, c.tops, diff)
		}
		for i, m := range got {
			if m.Score < 0 || m.Score > 1 || (i > 0 && m.Score > got[i-1].Score) {
				t.Errorf("n %d, tops %v: scores not in [0, 1] and descending: %v", c.n, c.tops, got)
				break
			}
		}
	}
}
