package budget

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrPrices reports a price model that cannot be parsed or is negative.
var ErrPrices = errors.New("budget: invalid prices")

// Prices is what a model's tokens cost, in US dollars per million tokens.
// A provider with a prompt cache bills the part of a prompt that repeats a
// recent request's prefix at CachedInput, and (Anthropic) the part it
// writes to the cache at CacheWrite; zero CacheWrite means writing costs
// what Input costs (OpenAI).
type Prices struct {
	Input       float64 `json:"input_usd_per_mtok"`
	CachedInput float64 `json:"cached_input_usd_per_mtok"`
	CacheWrite  float64 `json:"cache_write_usd_per_mtok,omitempty"`
	Output      float64 `json:"output_usd_per_mtok"`
}

// pricePresets are the prices of a few models, from the providers' pricing
// pages (platform.openai.com/docs/pricing, platform.claude.com/docs/en/
// about-claude/pricing) as stored copies showed them on 2026-11-24. Prices
// change: check them, or give your own (ParsePrices).
var pricePresets = map[string]Prices{
	"gpt-4o-mini":      {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"gpt-4.1":          {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"gpt-4.1-mini":     {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"claude-sonnet-5":  {Input: 2.00, CachedInput: 0.20, CacheWrite: 2.50, Output: 10.00},
	"claude-haiku-4-5": {Input: 1.00, CachedInput: 0.10, CacheWrite: 1.25, Output: 5.00},
}

// DefaultPrices is the price model used when none is given: Claude Sonnet
// 5's, whose cached input costs a tenth of its input, as on most models
// with a prompt cache.
var DefaultPrices = pricePresets["claude-sonnet-5"]

// PricePreset returns the prices of a model by name ("gpt-4o-mini",
// "claude-sonnet-5", ...: PricePresetNames), from the providers' pricing
// pages (platform.openai.com/docs/pricing,
// platform.claude.com/docs/en/about-claude/pricing) as stored copies
// showed them on 2026-11-24. Prices change: check them, or give your own.
func PricePreset(name string) (Prices, bool) {
	p, ok := pricePresets[name]
	return p, ok
}

// PricePresetNames returns the names PricePreset knows, sorted.
func PricePresetNames() []string {
	names := make([]string, 0, len(pricePresets))
	for n := range pricePresets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ParsePrices reads a price model: the name of a preset (PricePreset), or
// four numbers in US dollars per million tokens,
// "input,cached_input,cache_write,output" (cache_write 0: as input).
func ParsePrices(s string) (Prices, error) {
	s = strings.TrimSpace(s)
	if p, ok := pricePresets[s]; ok {
		return p, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return Prices{}, fmt.Errorf("%w: %q is neither a preset (%s) nor input,cached_input,cache_write,output in USD per million tokens",
			ErrPrices, s, strings.Join(PricePresetNames(), ", "))
	}
	var v [4]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 {
			return Prices{}, fmt.Errorf("%w: %q: field %d (%s) is not a price >= 0", ErrPrices, s, i+1,
				[]string{"input", "cached_input", "cache_write", "output"}[i])
		}
		v[i] = f
	}
	return Prices{Input: v[0], CachedInput: v[1], CacheWrite: v[2], Output: v[3]}, nil
}

// Write is the price of a prompt token written to the cache: CacheWrite,
// or Input when that is zero.
func (p Prices) Write() float64 {
	if p.CacheWrite > 0 {
		return p.CacheWrite
	}
	return p.Input
}

// Cost returns what a model call costs in US dollars: input tokens billed
// at full price, cached ones read from the prompt cache, written ones
// written to it, and output tokens.
func (p Prices) Cost(input, cached, written, output int) float64 {
	return (float64(input)*p.Input + float64(cached)*p.CachedInput + float64(written)*p.Write() + float64(output)*p.Output) / 1e6
}

// Zero reports whether no price is set.
func (p Prices) Zero() bool { return p == Prices{} }
