package think_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
)

// stableBudget holds search_tools (68 tokens) and about three tools of
// catalog (each costs about 40 tokens), so each step must choose.
const stableBudget = 200

func toolNames(ts []think.Offered) []string {
	var out []string
	for _, o := range ts {
		out = append(out, o.Tool.Name)
	}
	return out
}

// checkPrefix fails unless cur starts with prev's tools, each with the
// same rendering (bytes) and tier.
func checkPrefix(t *testing.T, prev, cur []think.Offered) {
	t.Helper()
	if len(cur) < len(prev) {
		t.Fatalf("%d tools after %d: %q after %q", len(cur), len(prev), toolNames(cur), toolNames(prev))
	}
	for i, p := range prev {
		c := cur[i]
		if c.Tool.Name != p.Tool.Name || c.Tier != p.Tier || c.Description != p.Description || string(c.Parameters) != string(p.Parameters) || c.Tokens != p.Tokens {
			t.Errorf("tool %d: %s (%s, %d tokens) after %s (%s, %d tokens): want the same bytes in the same place",
				i, c.Tool.Name, c.Tier, c.Tokens, p.Tool.Name, p.Tier, p.Tokens)
		}
	}
}

// budgeted sums the tokens the budget holds: every tool but found ones.
func budgeted(off think.Offer) int {
	n := 0
	for _, o := range off.Tools {
		if o.Reason != think.ReasonFound {
			n += o.Tokens
		}
	}
	return n
}

func TestStableKeepsPlaceAndAppends(t *testing.T) {
	ix := newIndex(t, catalog...)
	ctx := context.Background()
	stable := newThinker(t, ix, think.Options{Budget: stableBudget, Retrieval: retrieval.Options{K: 3}})
	fresh := newThinker(t, ix, think.Options{Budget: stableBudget, Retrieval: retrieval.Options{K: 3}, Policy: think.PolicyFresh})

	first, err := stable.Think(ctx, think.Request{Query: retrieval.Query{Task: "What is the weather in Bern?"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(first.Names(), "get_weather") || !first.HasSearchTool() {
		t.Fatalf("step 1 offers %q, want get_weather and search_tools", names(first))
	}
	// The next step is about email: a fresh choice drops the weather tools.
	q := retrieval.Query{Task: "What is the weather in Bern? Then email it to Bob.", Thought: "send_email to bob", Used: []string{"get_weather"}}
	f, err := fresh.Think(ctx, think.Request{Query: q, Previous: first.Tools, Steps: 1, MessageTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stable.Think(ctx, think.Request{Query: q, Previous: first.Tools, Steps: 1, MessageTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Evicted) != 0 {
		t.Errorf("fresh policy reports evictions %+v", f.Evicted)
	}
	checkPrefix(t, first.Tools, s.Tools)
	if len(s.Evicted) != 0 {
		t.Errorf("evicted %+v; with 500 message tokens keeping is cheaper", s.Evicted)
	}
	if budgeted(s) > stableBudget {
		t.Errorf("stable offer costs %d tokens, budget %d: %q", budgeted(s), stableBudget, names(s))
	}
	if s.Tokens != sumTokens(s.Tools) {
		t.Errorf("Offer.Tokens %d, tools sum to %d", s.Tokens, sumTokens(s.Tools))
	}
	for _, o := range s.Tools {
		want := think.ReasonKept
		switch {
		case o.Tool.Name == think.SearchToolName:
			want = think.ReasonMeta
		case o.Tool.Name == "get_weather":
			want = think.ReasonSticky
		case slices.Contains(f.Names(), o.Tool.Name):
			want = o.Reason // chosen for this step too: its fresh reason
		}
		if o.Reason != want {
			t.Errorf("%s offered as %s, want %s", o.Tool.Name, o.Reason, want)
		}
	}
	t.Logf("step 1 %q; fresh step 2 %q; stable step 2 %q", names(first), names(f), names(s))

	// A tool the model found with search_tools joins beyond the budget, and
	// stays (still found) at the step after.
	found, err := stable.Think(ctx, think.Request{Query: q, Previous: s.Tools, Steps: 2, MessageTokens: 600, Found: []string{"write_file"}})
	if err != nil {
		t.Fatal(err)
	}
	checkPrefix(t, s.Tools, found.Tools)
	last := found.Tools[len(found.Tools)-1]
	if !slices.Contains(s.Names(), "write_file") && (last.Tool.Name != "write_file" || last.Reason != think.ReasonFound) {
		t.Errorf("after search_tools found write_file: %q, want it appended as found", names(found))
	}
	if budgeted(found) > stableBudget {
		t.Errorf("budgeted tokens %d > %d: %q", budgeted(found), stableBudget, names(found))
	}
	again, err := stable.Think(ctx, think.Request{Query: q, Previous: found.Tools, Steps: 3, MessageTokens: 700})
	if err != nil {
		t.Fatal(err)
	}
	checkPrefix(t, found.Tools, again.Tools)
	if diff := cmp.Diff(names(found), names(again)); diff != "" {
		t.Errorf("nothing new at the next step, yet the list changed (-before +after):\n%s", diff)
	}
}

func sumTokens(ts []think.Offered) int {
	n := 0
	for _, o := range ts {
		n += o.Tokens
	}
	return n
}

func TestStableEvictions(t *testing.T) {
	ix := newIndex(t, catalog...)
	ctx := context.Background()
	th := newThinker(t, ix, think.Options{Budget: stableBudget, Retrieval: retrieval.Options{K: 3}})
	first, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: "What is the weather and the forecast in Bern?"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Names()) < 2 {
		t.Fatalf("step 1 offers %q, want at least two tools", names(first))
	}
	q := retrieval.Query{Task: "Add 2 and 3."}

	t.Run("removed and changed", func(t *testing.T) {
		prev := slices.Clone(first.Tools) // search_tools is last
		gone := prev[0]
		gone.Tool = mk("gone_tool", "A tool that left the catalog.")
		changed := prev[1]
		changed.Tool.Description += " (changed)"
		changed.Tool = changed.Tool.WithHash()
		prev[0], prev[1] = gone, changed
		off, err := th.Think(ctx, think.Request{Query: q, Previous: prev, Steps: 1, MessageTokens: 10000})
		if err != nil {
			t.Fatal(err)
		}
		var got []think.Eviction
		for _, e := range off.Evicted {
			if e.Reason != think.EvictCost {
				got = append(got, e)
			}
		}
		want := []think.Eviction{{Name: "gone_tool", Tokens: gone.Tokens, Reason: think.EvictRemoved}, {Name: changed.Tool.Name, Tokens: changed.Tokens, Reason: think.EvictChanged}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("evictions (-want +got):\n%s", diff)
		}
		// The prompt breaks at the first tool anyway: no stale tool stays.
		for _, o := range off.Tools {
			if o.Reason == think.ReasonKept {
				t.Errorf("%s kept although the prompt breaks before it", o.Tool.Name)
			}
		}
	})

	// Keeping k stale tokens for h more steps costs k × cached × h;
	// evicting them re-bills what follows them (search_tools, then the
	// messages) at write − cached. The weather tools are stale for "Add 2
	// and 3".
	stale, after := 0, 0
	for _, o := range first.Tools {
		if o.Reason == think.ReasonMeta {
			after += o.Tokens
		} else {
			stale += o.Tokens
		}
	}
	const steps = 40
	p := budget.DefaultPrices
	breakEven := float64(stale)*p.CachedInput*steps/(p.Write()-p.CachedInput) - float64(after) // message tokens at which keeping = evicting
	if breakEven < 50 {
		t.Fatalf("break-even at %.0f message tokens: too few stale tokens (%d) for this test", breakEven, stale)
	}
	for _, tc := range []struct {
		name    string
		msgs    int
		evicted bool
	}{
		{"long conversation: keep", int(breakEven) + 200, false},
		{"short conversation: evict", int(breakEven) - 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off, err := th.Think(ctx, think.Request{Query: q, Previous: first.Tools, Steps: steps, MessageTokens: tc.msgs})
			if err != nil {
				t.Fatal(err)
			}
			var byCost []string
			for _, e := range off.Evicted {
				if e.Reason == think.EvictCost {
					byCost = append(byCost, e.Name)
				}
			}
			if got := len(byCost) > 0; got != tc.evicted {
				t.Errorf("%d message tokens (break-even %.0f, %d stale tokens): evicted %q, want eviction %v", tc.msgs, breakEven, stale, byCost, tc.evicted)
			}
			if !tc.evicted {
				checkPrefix(t, first.Tools, off.Tools)
			}
		})
	}

	t.Run("over budget", func(t *testing.T) {
		small := newThinker(t, ix, think.Options{Budget: stableBudget / 2, Retrieval: retrieval.Options{K: 3}})
		off, err := small.Think(ctx, think.Request{Query: q, Previous: first.Tools, Steps: 1, MessageTokens: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if budgeted(off) > stableBudget/2 && len(off.Tools) > 1 {
			t.Errorf("%d tokens over a budget of %d: %q", budgeted(off), stableBudget/2, names(off))
		}
		n := 0
		for _, e := range off.Evicted {
			if e.Reason == think.EvictBudget {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no eviction for the budget: %+v", off.Evicted)
		}
	})
}

func TestParsePolicy(t *testing.T) {
	for _, p := range []think.Policy{think.PolicyStable, think.PolicyFresh} {
		got, ok := think.ParsePolicy(p.String())
		if !ok || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p.String(), got, ok)
		}
	}
	if _, ok := think.ParsePolicy("sticky"); ok {
		t.Error(`ParsePolicy("sticky") accepted`)
	}
}
