package budget_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/tool"
)

// TierName is the name and the first sentence, told where the parameters
// are, with no parameters; a schema no tier can send fails it too.
func TestTierName(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	tl := tool.Tool{Name: "get_weather", Description: "Get the current weather for a city. Uses the met office.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	r, err := tok.CountTool(tl, budget.TierName)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Get the current weather for a city." + budget.NameHint; r.Description != want || string(r.Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("TierName = %q %s; want %q and no parameters", r.Description, r.Parameters, want)
	}
	if m := cost(t, tok, tl, budget.TierMinimal); r.Tokens >= m {
		t.Errorf("TierName costs %d tokens, TierMinimal %d; want fewer", r.Tokens, m)
	}
	var back budget.Tier
	if err := back.UnmarshalText([]byte(budget.TierName.String())); err != nil || back != budget.TierName {
		t.Errorf("round trip of %q: %v, %v", budget.TierName, back, err)
	}
}

// Listings take at most Budget.Listing tokens, only what the schemas would
// not have had or the lowest-scored schemas: every tool the plan without
// listings sends is still sent, the best-scored one and the must-haves
// with their schemas, and more tools are sent in all. Without Listing,
// nothing is listed.
func TestSelectListing(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	seeds := uint64(40)
	if raceEnabled || testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 7))
		pool := synthPool(30, seed)
		cands := make([]budget.Candidate, len(pool))
		for i, tl := range pool {
			cands[i] = budget.Candidate{Tool: tl, Score: 1 - float64(i)/float64(len(pool))}
		}
		cands[3+r.IntN(20)].Pinned = true
		b := budget.Budget{Tokens: 600 + r.IntN(1500)}
		plain, err := budget.Select(tok, cands, b)
		if err != nil {
			t.Fatal(err)
		}
		b.Listing = b.Tokens / 2
		listed, err := budget.Select(tok, cands, b)
		if err != nil {
			t.Fatal(err)
		}
		tier := map[string]budget.Tier{}
		listTokens := 0
		for _, s := range listed.Tools {
			tier[s.Tool.Name] = s.Tier
			if s.Tier == budget.TierName {
				listTokens += s.Tokens
				if s.Pinned {
					t.Errorf("seed %d: pinned %s listed", seed, s.Tool.Name)
				}
			}
		}
		if listed.Tokens > b.Tokens || listTokens > b.Listing {
			t.Errorf("seed %d: %d tokens (%d of listings); want at most %d (%d)", seed, listed.Tokens, listTokens, b.Tokens, b.Listing)
		}
		best := ""
		for _, c := range cands { // best-scored first
			if best == "" && slicesHas(plain, c.Tool.Name) {
				best = c.Tool.Name
			}
		}
		for _, s := range plain.Tools {
			if s.Tier == budget.TierName {
				t.Errorf("seed %d: %s listed without Listing", seed, s.Tool.Name)
			}
			got, ok := tier[s.Tool.Name]
			switch {
			case !ok:
				t.Errorf("seed %d: %s (%v without listings) dropped for listings", seed, s.Tool.Name, s.Tier)
			case s.Tool.Name == best && got == budget.TierName:
				t.Errorf("seed %d: the best-scored tool %s lost its schema", seed, best)
			}
		}
		if len(plain.Dropped) > 0 && len(listed.Tools) <= len(plain.Tools) {
			t.Errorf("seed %d: %d tools with listings, %d without; want more", seed, len(listed.Tools), len(plain.Tools))
		}
	}
	if _, err := budget.Select(tok, nil, budget.Budget{Tokens: 10, Listing: -1}); err == nil || !strings.Contains(err.Error(), "Listing:-1") {
		t.Errorf("negative Listing: %v; want ErrInvalidBudget naming it", err)
	}
}

// Listings are the lowest-scored: with schemas of one size, a listed tool
// never scores above one sent with its schema.
func TestSelectListingOrder(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	var cands []budget.Candidate
	for i := range 20 {
		tl := tool.Tool{Name: fmt.Sprintf("tool_%02d", i), Description: "Do the thing number " + fmt.Sprint(i) + " with care.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"the first thing"},"b":{"type":"integer","description":"how many"}},"required":["a"]}`)}
		cands = append(cands, budget.Candidate{Tool: tl, Score: 1 - float64(i)/20})
	}
	full := cost(t, tok, cands[0].Tool, budget.TierFull)
	sel, err := budget.Select(tok, cands, budget.Budget{Tokens: 8 * full, Listing: 4 * full})
	if err != nil {
		t.Fatal(err)
	}
	tier := map[string]budget.Tier{}
	for _, s := range sel.Tools {
		tier[s.Tool.Name] = s.Tier
	}
	seenListed := false
	for _, c := range cands {
		tr, ok := tier[c.Tool.Name]
		if !ok {
			continue
		}
		if tr == budget.TierName {
			seenListed = true
		} else if seenListed {
			t.Errorf("%s sent at %v after a better-scored tool was listed: %v", c.Tool.Name, tr, names(sel))
		}
	}
	if !seenListed || len(sel.Tools) <= 8 {
		t.Errorf("selection %v; want more than 8 tools, some listed", names(sel))
	}
}

func slicesHas(sel budget.Selection, name string) bool {
	for _, s := range sel.Tools {
		if s.Tool.Name == name {
			return true
		}
	}
	return false
}

// A must-have scored as high as the best tool does not take the best's
// place: the best-scored tool that is not a must-have keeps its schema,
// however small the budget (toolbench explain's case: search_tools, pinned
// at score 1, and the tool the request names).
func TestSelectListingKeepsBest(t *testing.T) {
	tok := mustTokenizer(t, "o200k_base")
	schema := json.RawMessage(`{"type":"object","properties":{"to":{"type":"string","description":"Recipient email address"},"subject":{"type":"string","description":"The subject line"},"body":{"type":"string","description":"The text of the message"}},"required":["to"]}`)
	cands := []budget.Candidate{
		{Tool: tool.Tool{Name: "a_meta", Description: "Search for more tools.", InputSchema: schema}, Score: 1, Pinned: true},
		{Tool: tool.Tool{Name: "b_best", Description: "Send an email.", InputSchema: schema}, Score: 1},
	}
	for i := range 6 {
		cands = append(cands, budget.Candidate{Tool: tool.Tool{Name: fmt.Sprintf("c_%d", i), Description: "Another tool.", InputSchema: schema}, Score: 0.5})
	}
	one := cost(t, tok, cands[1].Tool, budget.TierFull)
	for tokens := one; tokens <= 4*one; tokens += 3 {
		sel, err := budget.Select(tok, cands, budget.Budget{Tokens: tokens, Listing: tokens / 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sel.Tools {
			if s.Tool.Name == "b_best" && s.Tier == budget.TierName {
				t.Errorf("%d tokens: the best tool is listed: %v", tokens, names(sel))
			}
		}
	}
}
