package benchmarks_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolsift/toolsift/internal/dataset"
	"github.com/toolsift/toolsift/internal/evalmetric"
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
	ts, th := newToolset(t, tools, storeIn(t, t.TempDir()))
	// A small budget, a fifth of the catalog's tokens (the 37 tools fit
	// the default budget once compressed): the step must offer what the
	// request means, not only rank it.
	o := th.Options()
	o.Budget = 1000
	small, err := think.New(th.Index(), &o)
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
		if evalmetric.Hit(ranked, g, 2) == 0 || evalmetric.Hit(offered, g, len(offered)) == 0 {
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

	// Half the default budget, without listings (the default) and with
	// them (think.Options.Listing): a listed tool is offered by its name
	// and a line, its schema a search_tools step away, so what a step
	// offers with its schema (callable at once) is counted apart.
	o.Budget = think.DefaultBudget / 2
	half, err := think.New(th.Index(), &o)
	if err != nil {
		t.Fatal(err)
	}
	o.Listing = true
	halfListed, err := think.New(th.Index(), &o)
	if err != nil {
		t.Fatal(err)
	}
	offer := func(th *think.Thinker, task string) think.Offer {
		off, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: task}})
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	recall := func(names []string, g [][]string) float64 { return evalmetric.Recall(names, g, len(names)) }
	var h1, h3, kept, kept2, keptL, keptLAll float64
	for _, q := range queries {
		g := q.Groups()
		off := offer(th, q.Query)
		ranked := make([]string, len(off.Ranked))
		for i, m := range off.Ranked {
			ranked[i] = m.Tool.Name
		}
		h1 += evalmetric.Hit(ranked, g, 1)
		h3 += evalmetric.Hit(ranked, g, 3)
		kept += recall(off.WithSchema(), g)
		kept2 += recall(offer(half, q.Query).WithSchema(), g)
		offL := offer(halfListed, q.Query)
		keptL += recall(offL.WithSchema(), g)
		keptLAll += recall(offL.Names(), g)
		if recall(offL.Names(), g) < 1 {
			t.Errorf("%s %q: gold %v neither sent with its schema nor listed within %d tokens with listings: %v", q.ID, q.Query, q.Gold, o.Budget, offL.Names())
		}
		if testing.Verbose() && evalmetric.Hit(ranked, g, 3) == 0 {
			t.Logf("%s %q: gold %v, top 3 %v", q.ID, q.Query, q.Gold, ranked[:min(3, len(ranked))])
		}
	}
	n := float64(len(queries))
	t.Logf("everyday reference (%d requests): hit@1 %.3f, hit@3 %.3f, gold offered with its schema at step 1 %.3f; at %d tokens %.3f, with listings %.3f with its schema + %.3f listed",
		len(queries), h1/n, h3/n, kept/n, o.Budget, kept2/n, keptL/n, (keptLAll-keptL)/n)
	// The figures of docs/measurements.md ("Everyday requests" and
	// "Listings"), less one request: a change that loses more must say so
	// there. The gold offered is counted with its schema only: what the
	// model can call at once.
	const wantH1, wantH3, wantKept, wantKept2 = everydayRefHit1, everydayRefHit3, 1.0, everydayRefKeptHalf
	if h1/n < wantH1-1.5/n || h3/n < wantH3-1.5/n || kept/n < wantKept-1.5/n || kept2/n < wantKept2-1.5/n {
		t.Errorf("hit@1 %.3f, hit@3 %.3f, gold offered with its schema %.3f (%.3f at %d tokens); want at least %.3f, %.3f, %.3f (%.3f) (less one request)",
			h1/n, h3/n, kept/n, kept2/n, o.Budget, wantH1, wantH3, wantKept, wantKept2)
	}
	if slices.ContainsFunc(queries, func(q dataset.Query) bool { return len(q.Groups()) != 1 }) {
		t.Error("the everyday set is single-intent: one gold group per request")
	}
}

// What docs/measurements.md reports for the everyday reference set
// ("Everyday requests"), with the defaults.
const (
	everydayRefHit1 = 0.554
	everydayRefHit3 = 0.730
	// everydayRefKeptHalf is the gold offered with its schema at half the
	// default budget, without listings: 73 of 74.
	everydayRefKeptHalf = 0.986
)
