package think_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// A step that offers search_tools lists the tools its schemas leave out
// (budget.TierName) in up to half its budget; the best-ranked keeps its
// schema, a found tool is never listed, and a step without search_tools
// (or without Listing, the default) lists nothing.
func TestThinkListing(t *testing.T) {
	var tools []tool.Tool
	for i := range 40 {
		tools = append(tools, tool.Tool{Name: fmt.Sprintf("weather_tool_%02d", i),
			Description: fmt.Sprintf("Get the weather report number %d for a city, with the temperature, the wind and the rain of the day.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"The city, as its name or its postal code."},` +
				`"units":{"type":"string","enum":["metric","imperial"],"description":"The units of the report."},"days":{"type":"integer","description":"How many days ahead."}},"required":["city"]}`)}.WithHash())
	}
	ix := newIndex(t, tools...)
	ctx := context.Background()
	step := func(o think.Options, req think.Request) (think.Offer, int, int) {
		t.Helper()
		if req.Query.Task == "" {
			req.Query.Task = "weather report for a city"
		}
		off, err := newThinker(t, ix, o).Think(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		listed, listTokens := 0, 0
		for _, x := range off.Tools {
			if x.Tier == budget.TierName {
				listed++
				listTokens += x.Tokens
				if !strings.HasSuffix(x.Description, budget.NameHint) || x.Reason == think.ReasonFound || x.Reason == think.ReasonMeta {
					t.Errorf("listed %s (%s): %q", x.Tool.Name, x.Reason, x.Description)
				}
			}
		}
		return off, listed, listTokens
	}
	o := think.Options{Budget: 600, Listing: true, Retrieval: retrieval.Options{K: 10}}
	off, listed, listTokens := step(o, think.Request{})
	if !off.HasSearchTool() || listed == 0 || listTokens > o.Budget/2 || off.Tokens > o.Budget {
		t.Errorf("offered %v: %d listed in %d tokens, %d in all; want search_tools, listings within %d, at most %d", names(off), listed, listTokens, off.Tokens, o.Budget/2, o.Budget)
	}
	top := off.Ranked[0].Tool.Name
	for _, x := range off.Tools {
		if x.Tool.Name == top && x.Tier == budget.TierName {
			t.Errorf("the best-ranked tool %s is listed", top)
		}
	}
	noList := o
	noList.Listing = false
	offPlain, n, _ := step(noList, think.Request{})
	if n != 0 || len(offPlain.Tools) >= len(off.Tools) {
		t.Errorf("without Listing: %d listed, %d tools (with listings %d); want none listed and fewer tools", n, len(offPlain.Tools), len(off.Tools))
	}
	never := o
	never.Search = think.SearchNever
	if _, n, _ := step(never, think.Request{}); n != 0 {
		t.Errorf("without search_tools: %d listed; want none", n)
	}
	// A tool the model found keeps its schema, even ranked last.
	last := off.Ranked[len(off.Ranked)-1].Tool.Name
	offFound, _, _ := step(o, think.Request{Found: []string{last}})
	for _, x := range offFound.Tools {
		if x.Tool.Name == last && (x.Reason != think.ReasonFound || x.Tier == budget.TierName) {
			t.Errorf("found %s offered as %s at %v; want found, with a schema", last, x.Reason, x.Tier)
		}
	}

	// The stable policy: a listed tool of the previous step that the model
	// then asked for comes whole (its bytes change), not kept listed.
	var was string
	for _, x := range off.Tools {
		if x.Tier == budget.TierName {
			was = x.Tool.Name
		}
	}
	next, _, _ := step(o, think.Request{Found: []string{was}, Previous: off.Tools, Steps: 1})
	whole := false
	for _, x := range next.Tools {
		if x.Tool.Name == was {
			whole = x.Tier != budget.TierName && x.Reason == think.ReasonFound
		}
	}
	if !whole || !slices.ContainsFunc(next.Evicted, func(e think.Eviction) bool { return e.Name == was && e.Reason == think.EvictChanged }) {
		t.Errorf("listed %s found at the next step: offered %v, evicted %v; want it whole, its listing evicted as changed", was, names(next), next.Evicted)
	}
}
