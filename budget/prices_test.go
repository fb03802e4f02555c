package budget_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/budget"
)

func TestParsePrices(t *testing.T) {
	mini, ok := budget.PricePreset("gpt-4o-mini")
	if !ok {
		t.Fatal("no gpt-4o-mini preset")
	}
	for _, tc := range []struct {
		in   string
		want budget.Prices
	}{
		{"gpt-4o-mini", mini},
		{" 3, 0.3 ,3.75,15", budget.Prices{Input: 3, CachedInput: 0.3, CacheWrite: 3.75, Output: 15}},
		{"1,0.5,0,4", budget.Prices{Input: 1, CachedInput: 0.5, Output: 4}},
	} {
		got, err := budget.ParsePrices(tc.in)
		if err != nil {
			t.Errorf("ParsePrices(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParsePrices(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, bad := range []string{"", "gpt-9", "1,2,3", "1,2,3,-4", "1,x,3,4"} {
		if _, err := budget.ParsePrices(bad); !errors.Is(err, budget.ErrPrices) {
			t.Errorf("ParsePrices(%q) = %v, want ErrPrices", bad, err)
		}
	}
	for _, name := range budget.PricePresetNames() {
		p, ok := budget.PricePreset(name)
		if !ok || p.Zero() || p.CachedInput >= p.Input || p.Output <= p.Input {
			t.Errorf("preset %s: %+v", name, p)
		}
	}
}

func TestPricesCost(t *testing.T) {
	p := budget.Prices{Input: 2, CachedInput: 0.2, CacheWrite: 2.5, Output: 10}
	// 1M input at $2, 2M cached at $0.2, 1M written at $2.5, 0.5M out at $10.
	if got, want := p.Cost(1e6, 2e6, 1e6, 5e5), 2+0.4+2.5+5.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost = %v, want %v", got, want)
	}
	// No cache-write price: writing costs what input costs (OpenAI).
	q := budget.Prices{Input: 0.15, CachedInput: 0.075, Output: 0.6}
	if got, want := q.Cost(0, 0, 1e6, 0), 0.15; math.Abs(got-want) > 1e-9 {
		t.Errorf("Cost of writes without a write price = %v, want %v", got, want)
	}
}
