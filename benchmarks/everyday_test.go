package benchmarks_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
)

// The everyday requests over the four reference servers' 37 tools
// (testdata/everyday, written blind): each is one Think step with the
// library's defaults, the agent's first step. The README's example ("add 2
// and 3" finds everything's get-sum) must hold; the set's figures must not
// fall below what docs/measurements.md reports for the current ranking.
func TestEverydayReference(t *testing.T) {
	tools, err := dataset.LoadTools("testdata/everyday/reference/tools.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	queries, err := dataset.LoadQueries("testdata/everyday/reference/queries.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ts, err := toolsift.New(ctx, tools, &toolsift.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	th := ts.Thinker()
	// A small budget, a fifth of the catalog's tokens (the 37 tools fit
	// the default budget once compressed): the step must offer what the
	// request means, not only rank it.
	o := th.Options()
	o.Budget = 1000
	small, err := think.New(ts.Index(), &o)
	if err != nil {
		t.Fatal(err)
	}
	stepWith := func(th *think.Thinker, task string) ([]string, []string) {
		off, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: task}})
		if err != nil {
			t.Fatal(err)
		}
		ranked := make([]string, len(off.Ranked))
		for i, m := range off.Ranked {
			ranked[i] = m.Tool.Name
		}
		return ranked, off.Names()
	}
	step := func(task string) ([]string, []string) { return stepWith(th, task) }

	// The README's example and the (36) second one, on the real
	// servers' tools: memory's words ("add") and its server must not bury
	// the tool the request means.
	for _, c := range []struct {
		task string
		want []string // any of them in the top 2, and offered
	}{
		{"add 2 and 3", []string{"everything__get-sum"}},
		{"Use the get-sum tool to add 17 and 25.", []string{"everything__get-sum"}},
	} {
		ranked, offered := stepWith(small, c.task)
		g := [][]string{c.want}
		if retrieval.Hit(ranked, g, 2) == 0 || retrieval.Hit(offered, g, len(offered)) == 0 {
			t.Errorf("%q: ranked %v, offered %v within 1,000 tokens; want one of %v in the top 2 and offered", c.task, ranked[:min(5, len(ranked))], offered, c.want)
		}
	}

	// The same request through Search, what toolsift serve's search_tools
	// answers.
	found, err := ts.Search(ctx, "add 17 and 25", 5)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(found, func(m retrieval.Match) bool { return m.Tool.Name == "everything__get-sum" }); i < 0 || i > 1 {
		t.Errorf("Search(add 17 and 25): get-sum at %d of %v; want in the top 2", i, found)
	}

	// Half the default budget: with listings (think.Options.NoListing)
	// every request's gold is offered, 73 of 74 without.
	o.Budget = think.DefaultBudget / 2
	half, err := think.New(ts.Index(), &o)
	if err != nil {
		t.Fatal(err)
	}
	var h1, h3, kept, kept2 float64
	for _, q := range queries {
		ranked, offered := step(q.Query)
		g := q.Groups()
		h1 += retrieval.Hit(ranked, g, 1)
		h3 += retrieval.Hit(ranked, g, 3)
		kept += retrieval.Recall(offered, g, len(offered))
		_, offered2 := stepWith(half, q.Query)
		kept2 += retrieval.Recall(offered2, g, len(offered2))
		if retrieval.Recall(offered2, g, len(offered2)) < 1 {
			t.Errorf("%s %q: gold %v not offered within %d tokens: %v", q.ID, q.Query, q.Gold, o.Budget, offered2)
		}
		if testing.Verbose() && retrieval.Hit(ranked, g, 3) == 0 {
			t.Logf("%s %q: gold %v, top 3 %v", q.ID, q.Query, q.Gold, ranked[:min(3, len(ranked))])
		}
	}
	n := float64(len(queries))
	t.Logf("everyday reference (%d requests): hit@1 %.3f, hit@3 %.3f, gold offered at step 1 %.3f (%.3f at %d tokens)", len(queries), h1/n, h3/n, kept/n, kept2/n, o.Budget)
	// The figures of docs/measurements.md ("Everyday requests"), less
	// one request: a change that loses more must say so there.
	const wantH1, wantH3, wantKept = everydayRefHit1, everydayRefHit3, 1.0
	if h1/n < wantH1-1.5/n || h3/n < wantH3-1.5/n || kept/n < wantKept-1.5/n {
		t.Errorf("hit@1 %.3f, hit@3 %.3f, offered %.3f; want at least %.3f, %.3f, %.3f (less one request)",
			h1/n, h3/n, kept/n, wantH1, wantH3, wantKept)
	}
	if slices.ContainsFunc(queries, func(q dataset.Query) bool { return len(q.Groups()) != 1 }) {
		t.Error("the everyday set is single-intent: one gold group per request")
	}
}

// What docs/measurements.md reports for the everyday reference set
// ("Everyday requests"), with the defaults.
const (
	everydayRefHit1 = 0.527
	everydayRefHit3 = 0.743
)
