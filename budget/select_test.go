package budget_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

var words = strings.Fields("the a file search query user repository issue list create update delete " +
	"returns results page token filter by name id date range optional required value string number " +
	"message channel project task status comment label branch commit pull request review")

// synthTool makes a tool with nParams documented parameters and a
// description of nWords words: sizes like the real catalog's, from a seed.
func synthTool(r *rand.Rand, name string, nParams, nWords int) tool.Tool {
	sentence := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	props := map[string]any{}
	var required []string
	for i := range nParams {
		p := map[string]any{"type": []string{"string", "integer", "boolean"}[r.IntN(3)], "description": sentence(3+r.IntN(15)) + "."}
		if r.IntN(4) == 0 {
			p = map[string]any{"type": "string", "enum": []string{"asc", "desc"}, "default": "asc", "description": sentence(4) + "."}
		}
		pn := fmt.Sprintf("p%d", i)
		props[pn] = p
		if r.IntN(2) == 0 {
			required = append(required, pn)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if required != nil {
		schema["required"] = required
	}
	raw, _ := json.Marshal(schema)
	return tool.Tool{Name: name, Description: sentence(nWords) + ". " + sentence(nWords/2+1) + ".", InputSchema: raw}.WithHash()
}

func synthPool(n int, seed uint64) []tool.Tool {
	r := rand.New(rand.NewPCG(seed, 1))
	pool := make([]tool.Tool, n)
	for i := range pool {
		pool[i] = synthTool(r, fmt.Sprintf("tool_%03d", i), r.IntN(8), 3+r.IntN(40))
	}
	return pool
}

func names(sel budget.Selection) []string {
	var out []string
	for _, s := range sel.Tools {
		out = append(out, fmt.Sprintf("%s@%v", s.Tool.Name, s.Tier))
	}
	return out
}

// cost returns the tokens of tool at tier.
func cost(t *testing.T, tok *budget.Tokenizer, tool tool.Tool, tier budget.Tier) int {
	t.Helper()
	r, err := tok.CountTool(tool, tier)
	if err != nil {
		t.Fatal(err)
	}
	return r.Tokens
}

func TestSelectErrors(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	pool := synthPool(4, 1)
	cands := []budget.Candidate{{Tool: pool[0], Score: 1}, {Tool: pool[1], Score: 0.5, Pinned: true}, {Tool: pool[2], Score: 0.2, Pinned: true}}
	minCost := math.MaxInt
	for _, c := range cands {
		minCost = min(minCost, cost(t, tok, c.Tool, budget.TierMinimal))
	}
	tests := []struct {
		name  string
		cands []budget.Candidate
		b     budget.Budget
		err   error
		msg   string
	}{
		{"negative tokens", cands, budget.Budget{Tokens: -1}, budget.ErrInvalidBudget, "Tokens:-1"},
		{"min over max", cands, budget.Budget{Tokens: 1000, MinTools: 3, MaxTools: 2}, budget.ErrInvalidBudget, "MinTools:3"},
		{"nothing fits", cands[:1], budget.Budget{Tokens: 5}, budget.ErrBudgetTooSmall, fmt.Sprintf("5 tokens cannot hold even one tool: the cheapest, %q, needs", pool[0].Name)},
		{"pinned do not fit", cands, budget.Budget{Tokens: minCost}, budget.ErrBudgetTooSmall, "the 2 pinned and minimum tools"},
		{"min tools do not fit", cands[:1], budget.Budget{Tokens: 0, MinTools: 1}, budget.ErrBudgetTooSmall, "0 tokens cannot hold the 1 pinned and minimum tools"},
		{"more pinned than max", cands, budget.Budget{Tokens: 10000, MaxTools: 1}, budget.ErrBudgetTooSmall, "2 pinned tools but MaxTools is 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := budget.Select(tok, tt.cands, tt.b)
			if !errors.Is(err, tt.err) || !strings.Contains(fmt.Sprint(err), tt.msg) {
				t.Errorf("error = %v, want %v containing %q", err, tt.err, tt.msg)
			}
		})
	}
	sel, err := budget.Select(tok, nil, budget.Budget{Tokens: 0})
	if err != nil || len(sel.Tools) != 0 {
		t.Errorf("no candidates: %v, %v; want an empty selection", sel, err)
	}
}

func TestSelectCases(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	pool := synthPool(6, 2)
	full := func(i int) int { return cost(t, tok, pool[i], budget.TierFull) }
	// cheapest is the least compressed tier among those that cost least.
	cheapest := func(i int) (budget.Tier, int) {
		best := budget.TierFull
		for tier := budget.TierFull + 1; tier <= budget.TierMinimal; tier++ { // TierName only for Listing
			if cost(t, tok, pool[i], tier) < cost(t, tok, pool[i], best) {
				best = tier
			}
		}
		return best, cost(t, tok, pool[i], best)
	}
	tier0, cost0 := cheapest(0)
	tier1, cost1 := cheapest(1)
	all := []budget.Candidate{
		{Tool: pool[0], Score: 0.9}, {Tool: pool[1], Score: 0.8}, {Tool: pool[2], Score: 0.7},
		{Tool: pool[3], Score: 0.6}, {Tool: pool[4], Score: 0.5}, {Tool: pool[5], Score: 0.4},
	}
	sumFull := 0
	for i := range pool {
		sumFull += full(i)
	}
	tests := []struct {
		name  string
		cands []budget.Candidate
		b     budget.Budget
		want  []string
	}{
		{"everything fits at full, sorted by name", []budget.Candidate{all[2], all[0], all[1]}, budget.Budget{Tokens: sumFull},
			[]string{"tool_000@full", "tool_001@full", "tool_002@full"}},
		{"pinned ones too, by name", []budget.Candidate{all[0], {Tool: pool[5], Score: 0.1, Pinned: true}, all[1]}, budget.Budget{Tokens: sumFull},
			[]string{"tool_000@full", "tool_001@full", "tool_005@full"}},
		{"max tools keeps the best", all, budget.Budget{Tokens: sumFull, MaxTools: 2},
			[]string{"tool_000@full", "tool_001@full"}},
		{"duplicates merge", []budget.Candidate{all[0], {Tool: pool[0], Score: 0.1, Pinned: true}}, budget.Budget{Tokens: sumFull},
			[]string{"tool_000@full"}},
		{"min tools forced at the cheapest tier", all[:2], budget.Budget{Tokens: cost0 + cost1, MinTools: 2},
			[]string{"tool_000@" + tier0.String(), "tool_001@" + tier1.String()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := budget.Select(tok, tt.cands, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, names(sel)); diff != "" {
				t.Errorf("selection (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelectCompressesTheTail: with room for about half of the tools at
// full, the usual top-k keeps half; Select keeps more of them, compressed,
// and more relevance.
func TestSelectCompressesTheTail(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	pool := synthPool(20, 3)
	var cands []budget.Candidate
	sumFull := 0
	for i, tool := range pool {
		cands = append(cands, budget.Candidate{Tool: tool, Score: 1 - float64(i)/40})
		sumFull += cost(t, tok, tool, budget.TierFull)
	}
	b := budget.Budget{Tokens: sumFull / 2}
	sel, err := budget.Select(tok, cands, b)
	if err != nil {
		t.Fatal(err)
	}
	topK, topKValue := topKFull(t, tok, cands, b)
	if len(sel.Tools) <= topK || sel.Value <= topKValue {
		t.Errorf("Select kept %d tools, value %.3f; top-k at full kept %d, value %.3f", len(sel.Tools), sel.Value, topK, topKValue)
	}
	t.Logf("budget %d of %d: Select keeps %d tools (value %.3f, %d tokens), top-k at full %d (value %.3f)",
		b.Tokens, sumFull, len(sel.Tools), sel.Value, sel.Tokens, topK, topKValue)
}

// topKFull is the baseline: best-scored first at full while it fits.
func topKFull(t *testing.T, tok *budget.Tokenizer, cands []budget.Candidate, b budget.Budget) (int, float64) {
	sorted := slices.Clone(cands)
	slices.SortStableFunc(sorted, func(x, y budget.Candidate) int {
		if x.Score != y.Score {
			if x.Score > y.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Tool.Name, y.Tool.Name)
	})
	used, n, v := 0, 0, 0.0
	for _, c := range sorted {
		if b.MaxTools > 0 && n == b.MaxTools {
			break
		}
		k := cost(t, tok, c.Tool, budget.TierFull)
		if used+k > b.Tokens {
			break
		}
		used += k
		n++
		v += max(c.Score, 0)
	}
	return n, v
}

// TestSelectProperties checks many seeded random cases: never over budget,
// the reported totals add up, pinned and minimum tools are kept, MaxTools
// holds, the order is pinned-then-name, the result does not depend on the
// candidates' order, and the value is at least the usual top-k's.
func TestSelectProperties(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	pool := synthPool(60, 4)
	r := rand.New(rand.NewPCG(5, 6))
	cases := 400
	if raceEnabled || testing.Short() {
		cases = 100
	}
	for i := range cases {
		n := 1 + r.IntN(40)
		perm := r.Perm(len(pool))[:n]
		var cands []budget.Candidate
		sumFull := 0
		for _, k := range perm {
			c := budget.Candidate{Tool: pool[k], Score: r.Float64()*2 - 0.2}
			if r.IntN(12) == 0 {
				c.Pinned = true
			}
			cands = append(cands, c)
			sumFull += cost(t, tok, pool[k], budget.TierFull)
		}
		b := budget.Budget{Tokens: r.IntN(sumFull + 50)}
		if r.IntN(3) == 0 {
			b.MaxTools = 1 + r.IntN(n)
		}
		if r.IntN(4) == 0 {
			b.MinTools = r.IntN(3)
			if b.MaxTools > 0 {
				b.MinTools = min(b.MinTools, b.MaxTools)
			}
		}
		sel, err := budget.Select(tok, cands, b)
		if errors.Is(err, budget.ErrBudgetTooSmall) {
			continue
		}
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		check := func(cond bool, format string, args ...any) {
			if !cond {
				t.Errorf("case %d (budget %+v, %d candidates): %s", i, b, n, fmt.Sprintf(format, args...))
			}
		}
		sum, pinned := 0, 0
		inSel := map[string]bool{}
		for j, s := range sel.Tools {
			sum += s.Tokens
			inSel[s.Tool.Name] = true
			if s.Pinned {
				pinned++
			}
			if j > 0 {
				p := sel.Tools[j-1]
				check(p.Tool.Name < s.Tool.Name, "order: %s before %s", p.Tool.Name, s.Tool.Name)
			}
		}
		check(sel.Tokens <= b.Tokens, "over budget: %d > %d", sel.Tokens, b.Tokens)
		check(sum == sel.Tokens, "Tokens %d, sum %d", sel.Tokens, sum)
		check(len(sel.Tools)+len(sel.Dropped) == n, "%d selected + %d dropped != %d", len(sel.Tools), len(sel.Dropped), n)
		check(b.MaxTools == 0 || len(sel.Tools) <= b.MaxTools, "%d tools > MaxTools", len(sel.Tools))
		check(len(sel.Tools) >= min(b.MinTools, n), "%d tools < MinTools", len(sel.Tools))
		for _, c := range cands {
			check(!c.Pinned || inSel[c.Tool.Name], "pinned %s dropped", c.Tool.Name)
		}
		if pinned == 0 && b.MinTools == 0 {
			_, base := topKFull(t, tok, cands, b)
			check(sel.Value >= base-1e-9, "value %.4f < top-k's %.4f", sel.Value, base)
		}
		shuffled := slices.Clone(cands)
		r.Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
		again, err := budget.Select(tok, shuffled, b)
		if err != nil {
			t.Fatalf("case %d again: %v", i, err)
		}
		check(cmp.Equal(names(sel), names(again)) && cmp.Equal(sel.Dropped, again.Dropped), "not deterministic:\n%v\n%v", names(sel), names(again))
	}
}

// TestSelectNearOptimal compares Select with the exact optimum (brute force
// over the 5^n choices) on small random instances: never below half of it
// (the guarantee), and on average close to it.
func TestSelectNearOptimal(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	pool := synthPool(30, 7)
	r := rand.New(rand.NewPCG(8, 9))
	cases := 150
	if raceEnabled || testing.Short() {
		cases = 40
	}
	sumRatio, optimal, counted := 0.0, 0, 0
	for i := range cases {
		n := 1 + r.IntN(6)
		var cands []budget.Candidate
		var costs [][budget.NumTiers]int
		total := 0
		for _, k := range r.Perm(len(pool))[:n] {
			cands = append(cands, budget.Candidate{Tool: pool[k], Score: r.Float64()})
			var c [budget.NumTiers]int
			for tier := range budget.Tier(budget.NumTiers) {
				c[tier] = cost(t, tok, pool[k], tier)
			}
			costs = append(costs, c)
			total += c[budget.TierFull]
		}
		b := budget.Budget{Tokens: r.IntN(total + 1)}
		sel, err := budget.Select(tok, cands, b)
		if errors.Is(err, budget.ErrBudgetTooSmall) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		best := bruteForce(cands, costs, b.Tokens)
		if sel.Value < best/2-1e-9 {
			t.Errorf("case %d: value %.4f < half the optimum %.4f", i, sel.Value, best)
		}
		if best > 0 {
			counted++
			sumRatio += sel.Value / best
			if sel.Value >= best-1e-9 {
				optimal++
			}
		}
	}
	if counted == 0 {
		t.Fatal("no case was checked")
	}
	t.Logf("%d cases: optimal in %d, mean value/optimum %.4f", counted, optimal, sumRatio/float64(counted))
	if mean := sumRatio / float64(counted); mean < 0.95 {
		t.Errorf("mean value/optimum %.4f < 0.95", mean)
	}
}

func bruteForce(cands []budget.Candidate, costs [][budget.NumTiers]int, limit int) float64 {
	best := 0.0
	var rec func(i, used int, v float64)
	rec = func(i, used int, v float64) {
		if i == len(cands) {
			best = max(best, v)
			return
		}
		rec(i+1, used, v)
		for tier := range budget.Tier(budget.NumTiers) {
			if c := costs[i][tier]; used+c <= limit {
				rec(i+1, used+c, v+max(cands[i].Score, 0)*tier.Quality())
			}
		}
	}
	rec(0, 0, 0)
	return best
}
