package think_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// explainOne explains one tool and checks what every explanation must
// hold, whatever the decision.
func explainOne(t *testing.T, th *think.Thinker, req think.Request, name string) (think.Explanation, think.ToolExplanation) {
	t.Helper()
	ex, err := th.Explain(context.Background(), req, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Tools) != 1 || ex.Tools[0].Name != name {
		t.Fatalf("Explain(%q) explained %+v", name, ex.Tools)
	}
	te := ex.Tools[0]
	offered := false
	for _, o := range ex.Offer.Tools {
		offered = offered || o.Tool.Name == name
	}
	if offered != (te.Decision == think.DecisionOffered) {
		t.Errorf("%s: decision %q, but offered = %v", name, te.Decision, offered)
	}
	if ex.Left != ex.Budget-ex.Offer.Tokens {
		t.Errorf("Left = %d, want %d - %d", ex.Left, ex.Budget, ex.Offer.Tokens)
	}
	if len(te.Signals) != len(ex.Retrieval.Signals) {
		t.Errorf("%s: %d signal ranks for %d signals", name, len(te.Signals), len(ex.Retrieval.Signals))
	}
	return ex, te
}

func TestExplainOffered(t *testing.T) {
	ix := newIndex(t, catalog...)
	th := newThinker(t, ix, think.Options{Budget: 150, Retrieval: retrieval.Options{K: 3}})
	req := think.Request{Query: retrieval.Query{Task: "send an email to Bob about lunch"}}
	ex, te := explainOne(t, th, req, "send_email")
	if te.Decision != think.DecisionOffered || te.Reason != think.ReasonRetrieved || te.Rank != 1 || !te.Retrieved {
		t.Fatalf("send_email: %+v", te)
	}
	if te.Tier != budget.TierFull || te.Tokens != te.FullTokens || te.Tokens == 0 {
		t.Errorf("send_email offered at %v for %d tokens, full tier costs %d", te.Tier, te.Tokens, te.FullTokens)
	}
	// Hybrid over an index with no semantic encoder: two signals, and the
	// words "send" and "email" put it first in BM25F.
	var sigs []retrieval.Mode
	for _, s := range ex.Retrieval.Signals {
		sigs = append(sigs, s.Signal)
	}
	if diff := cmp.Diff([]retrieval.Mode{retrieval.Lexical, retrieval.Vector}, sigs); diff != "" {
		t.Errorf("signals (-want +got):\n%s", diff)
	}
	if te.Signals[0].Rank != 1 || te.Signals[0].Score <= 0 {
		t.Errorf("lexical rank of send_email: %+v", te.Signals[0])
	}
}

func TestExplainNotInCatalog(t *testing.T) {
	ix := newIndex(t, catalog...)
	th := newThinker(t, ix, think.Options{Budget: 150, Retrieval: retrieval.Options{K: 3}})
	req := think.Request{Query: retrieval.Query{Task: "what is the weather in Paris"}}
	_, te := explainOne(t, th, req, "send-email")
	if te.Decision != think.DecisionNotInCatalog || te.Rank != 0 {
		t.Fatalf("send-email: %+v", te)
	}
	if len(te.Close) == 0 || te.Close[0] != "send_email" {
		t.Errorf("close names of send-email = %q, want send_email first", te.Close)
	}
}

func TestExplainBelowKAndNotRanked(t *testing.T) {
	ix := newIndex(t, catalog...)
	// Without packing only K tools compete: the second is below K.
	th := newThinker(t, ix, think.Options{Budget: 150, NoPack: true, Retrieval: retrieval.Options{K: 1, Mode: retrieval.Lexical}})
	req := think.Request{Query: retrieval.Query{Task: "weather forecast for Paris"}}
	ex, err := th.Explain(context.Background(), req, "get_weather", "get_forecast", "add_numbers")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, te := range ex.Tools {
		got[te.Name] = te.Decision
	}
	want := map[string]string{
		"get_forecast": think.DecisionOffered,   // "weather" and "forecast"
		"get_weather":  think.DecisionBelowK,    // "weather" only: second, K is 1
		"add_numbers":  think.DecisionNotRanked, // no word in common: BM25F never lists it
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	// Sorted by fused rank, the unranked last.
	if ex.Tools[0].Name != "get_forecast" || ex.Tools[1].Name != "get_weather" || ex.Tools[2].Rank != 0 {
		t.Errorf("order: %+v", ex.Tools)
	}
	if r := ex.Tools[1]; r.Rank != 2 || r.Signals[0].Rank != 2 || r.Retrieved {
		t.Errorf("get_weather: %+v", r)
	}
	// Packed (the default), the tools after K compete for the budget too:
	// get_weather is retrieved and cut by the budget of 150, not below K.
	packed := newThinker(t, ix, think.Options{Budget: 150, Retrieval: retrieval.Options{K: 1, Mode: retrieval.Lexical}})
	ex, err = packed.Explain(context.Background(), req, "get_weather")
	if err != nil {
		t.Fatal(err)
	}
	if r := ex.Tools[0]; r.Decision != think.DecisionCutByBudget || !r.Retrieved || r.ShortBy <= 0 {
		t.Errorf("get_weather, packed: %+v", r)
	}
}

func TestExplainBelowMinScore(t *testing.T) {
	ix := newIndex(t, catalog...)
	th := newThinker(t, ix, think.Options{Budget: 150, Retrieval: retrieval.Options{K: 5, Mode: retrieval.Lexical, MinScore: 0.9}})
	req := think.Request{Query: retrieval.Query{Task: "weather forecast for Paris"}}
	_, te := explainOne(t, th, req, "get_weather")
	if te.Decision != think.DecisionBelowMinScore || !te.BelowMinScore || te.Score >= 0.9 {
		t.Fatalf("get_weather: %+v", te)
	}
}

func TestExplainPinned(t *testing.T) {
	ix := newIndex(t, catalog...)
	th := newThinker(t, ix, think.Options{Budget: 150, Retrieval: retrieval.Options{K: 1, Pinned: []string{"read_file"}}})
	req := think.Request{Query: retrieval.Query{Task: "weather forecast for Paris"}}
	_, te := explainOne(t, th, req, "read_file")
	if te.Decision != think.DecisionOffered || te.Reason != think.ReasonPinned || !te.Pinned || te.Retrieved {
		t.Fatalf("read_file: %+v", te)
	}
}

// A large tool ranked first but too large for what the pinned tool left:
// cut by the budget, short by the tokens it lacked.
func TestExplainCutByBudget(t *testing.T) {
	long := strings.Repeat("Every field of the invoice is checked against the ledger before it is filed. ", 8)
	props := `{"type":"object","properties":{`
	for i := range 12 {
		if i > 0 {
			props += ","
		}
		props += `"field` + string(rune('a'+i)) + `":{"type":"string","description":"One of the invoice's fields, checked against the ledger."}`
	}
	props += `}}`
	big := tool.Tool{Name: "file_invoice", Description: "File an invoice. " + long, InputSchema: []byte(props)}.WithHash()
	ix := newIndex(t, append(catalog, big)...)
	tok := tokenizer(t)
	cheapest := func(tl tool.Tool) int {
		best := -1
		for tier := budget.TierFull; tier <= budget.TierMinimal; tier++ { // the tiers with a schema
			r, err := tok.CountTool(tl, tier)
			if err != nil {
				t.Fatal(err)
			}
			if best < 0 || r.Tokens < best {
				best = r.Tokens
			}
		}
		return best
	}
	cheap := cheapest(big)
	// The pinned tool (read_file) and search_tools, at their cheapest,
	// take most of the budget; what is left is less than the invoice tool
	// at its cheapest.
	b := cheapest(catalog[5]) + cheapest(think.SearchTool()) + cheap/2
	// Without listings (the default): a listing would fit where the schema does not.
	th := newThinker(t, ix, think.Options{Budget: b, Retrieval: retrieval.Options{K: 1, Pinned: []string{"read_file"}, Mode: retrieval.Lexical}})
	req := think.Request{Query: retrieval.Query{Task: "file the invoice"}}
	ex, te := explainOne(t, th, req, "file_invoice")
	if te.Decision != think.DecisionCutByBudget || te.Rank != 1 || !te.Retrieved {
		t.Fatalf("file_invoice: %+v (offered %v)", te, names(ex.Offer))
	}
	if te.CheapestTokens != cheap || te.ShortBy != cheap-ex.Left || te.ShortBy <= 0 {
		t.Errorf("cheapest %d, short by %d with %d left; want cheapest %d", te.CheapestTokens, te.ShortBy, ex.Left, cheap)
	}
}

// With no tool named, Explain covers what the step considered, in rank
// order.
func TestExplainConsidered(t *testing.T) {
	ix := newIndex(t, catalog...)
	th := newThinker(t, ix, think.Options{Budget: 150, Retrieval: retrieval.Options{K: 3}})
	ex, err := th.Explain(context.Background(), think.Request{Query: retrieval.Query{Task: "read the weather file"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Tools) != len(ex.Offer.Ranked) {
		t.Fatalf("%d tools explained, %d ranked", len(ex.Tools), len(ex.Offer.Ranked))
	}
	for i, te := range ex.Tools {
		if te.Rank != i+1 {
			t.Errorf("tool %d (%s) has rank %d", i, te.Name, te.Rank)
		}
	}
}
