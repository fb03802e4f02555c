package think_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/usage"
)

// tokenizer is shared by the tests (testenv.Tokenizer).
var tokenizer = testenv.Tokenizer

func mk(name, desc string) tool.Tool {
	return tool.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}.WithHash()
}

var catalog = []tool.Tool{
	mk("get_weather", "Get the current weather for a city."),
	mk("get_forecast", "Get the weather forecast for the next days."),
	mk("send_email", "Send an email message to a recipient."),
	mk("list_emails", "List the emails in the inbox."),
	mk("create_event", "Create a calendar event."),
	mk("read_file", "Read a text file."),
	mk("write_file", "Write a text file."),
	mk("add_numbers", "Add two numbers and return the sum."),
}

func newIndex(t *testing.T, tools ...tool.Tool) *toolindex.Index {
	return testenv.Index(t, nil, nil, tools...)
}

func newThinker(t *testing.T, ix *toolindex.Index, o think.Options) *think.Thinker {
	t.Helper()
	o.Tokenizer = tokenizer(t)
	th, err := think.New(ix, &o)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func names(off think.Offer) []string {
	var out []string
	for _, o := range off.Tools {
		out = append(out, o.Tool.Name+":"+o.Reason)
	}
	return out
}

func TestThinkEverythingFits(t *testing.T) {
	ix := newIndex(t, catalog...)
	th := newThinker(t, ix, think.Options{Retrieval: retrieval.Options{K: 2}})
	off, err := th.Think(context.Background(), think.Request{Query: retrieval.Query{Task: "add 2 and 3"}})
	if err != nil {
		t.Fatal(err)
	}
	// K bounds the ranking, not what is sent: the whole catalog fits the
	// default budget, so every tool is offered and search_tools is not.
	if !off.Everything || len(off.Tools) != len(catalog) || off.HasSearchTool() {
		t.Errorf("offered %v (everything=%v); want all %d tools, no search_tools", names(off), off.Everything, len(catalog))
	}
	if off.Tokens != off.AllTokens {
		t.Errorf("tokens %d, want the catalog's %d", off.Tokens, off.AllTokens)
	}
	if !slices.IsSortedFunc(off.Tools, func(a, b think.Offered) int { return strings.Compare(a.Tool.Name, b.Tool.Name) }) {
		t.Errorf("request order %v is not by name", names(off))
	}
}

func TestThinkSearchWheneverLeftOut(t *testing.T) {
	ix := newIndex(t, catalog...)
	all, err := think.New(ix, &think.Options{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	full, _ := all.Think(context.Background(), think.Request{})
	// A budget just under the catalog's cost: some tools are left out (or
	// compressed); search_tools comes whenever one is left out.
	th := newThinker(t, ix, think.Options{Budget: full.AllTokens / 2, Retrieval: retrieval.Options{K: 3}})
	off, err := th.Think(context.Background(), think.Request{Query: retrieval.Query{Task: "send an email to bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if off.Everything || !off.HasSearchTool() {
		t.Fatalf("offered %v; want a selection with search_tools last", names(off))
	}
	if off.Tokens > full.AllTokens/2 {
		t.Errorf("%d tokens over the budget %d", off.Tokens, full.AllTokens/2)
	}
	if !slices.Contains(off.Names(), "send_email") {
		t.Errorf("offered %v; want send_email", off.Names())
	}
	never := newThinker(t, ix, think.Options{Budget: full.AllTokens / 2, Search: think.SearchNever, Retrieval: retrieval.Options{K: 3}})
	if off, _ := never.Think(context.Background(), think.Request{Query: retrieval.Query{Task: "send an email"}}); off.HasSearchTool() {
		t.Errorf("SearchNever offered %v", names(off))
	}
}

func TestThinkOversizedTool(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, `"field_%d":{"type":"string","description":"Column %d of the SharePoint list, with its own long explanation."},`, i, i)
	}
	huge := tool.Tool{Name: "create_sharepoint_list", Description: "Create a SharePoint list with columns.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + strings.TrimSuffix(b.String(), ",") + `}}`)}.WithHash()
	ix := newIndex(t, append(slices.Clone(catalog), huge)...)
	th := newThinker(t, ix, think.Options{Budget: 600, Retrieval: retrieval.Options{K: 5}})
	cheap, err := tokenizer(t).CountTool(huge, budget.TierMinimal)
	if err != nil {
		t.Fatal(err)
	}
	if cheap.Tokens <= 600 {
		t.Fatalf("test tool costs %d tokens at its minimal tier; want more than the budget", cheap.Tokens)
	}
	ctx := context.Background()
	tests := []struct {
		name  string
		req   think.Request
		offer bool
	}{
		{"clear top match", think.Request{Query: retrieval.Query{Task: "create a sharepoint list"}}, true},
		{"found by search_tools", think.Request{Query: retrieval.Query{Task: "read a file"}, Found: []string{"create_sharepoint_list"}}, true},
		{"not wanted", think.Request{Query: retrieval.Query{Task: "read a file"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, err := th.Think(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Contains(off.Names(), huge.Name)
			if got != tt.offer || (off.Oversized == huge.Name) != tt.offer {
				t.Fatalf("offered %v, Oversized %q; want the huge tool offered: %v", names(off), off.Oversized, tt.offer)
			}
			rest := off.Tokens
			for _, o := range off.Tools {
				if o.Tool.Name == huge.Name {
					rest -= o.Tokens
					if o.Tokens != cheap.Tokens {
						t.Errorf("huge tool sent at %d tokens, want its cheapest %d", o.Tokens, cheap.Tokens)
					}
				}
			}
			if rest > 600 {
				t.Errorf("the other tools cost %d tokens, over the budget 600", rest)
			}
		})
	}
}

func TestThinkCatalogCostFollowsChanges(t *testing.T) {
	ix := newIndex(t, catalog[:3]...)
	th := newThinker(t, ix, think.Options{})
	ctx := context.Background()
	before, err := th.Think(ctx, think.Request{})
	if err != nil {
		t.Fatal(err)
	}
	gen := ix.Generation()
	if err := ix.Apply(ctx, tool.Change{Added: catalog[3:5], Removed: []string{catalog[0].Name}}); err != nil {
		t.Fatal(err)
	}
	if ix.Generation() == gen {
		t.Fatal("Generation did not move after a change")
	}
	after, err := th.Think(ctx, think.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var want int
	for _, tl := range []tool.Tool{catalog[1], catalog[2], catalog[3], catalog[4]} {
		r, err := tokenizer(t).CountTool(tl, budget.TierFull)
		if err != nil {
			t.Fatal(err)
		}
		want += r.Tokens
	}
	if diff := cmp.Diff([2]int{want, 4}, [2]int{after.AllTokens, after.AllTools}); diff != "" {
		t.Errorf("catalog cost after the change (-want +got):\n%s (before: %d tokens, %d tools)", diff, before.AllTokens, before.AllTools)
	}
}

// costCache is a CostCache in memory that counts lookups and stores.
type costCache struct {
	mu         sync.Mutex
	costs      map[string]int
	hits, puts int
	tokenizers map[string]bool
}

func (c *costCache) Cost(tokenizer, hash string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokenizers[tokenizer] = true
	n, ok := c.costs[tokenizer+"/"+hash]
	if ok {
		c.hits++
	}
	return n, ok
}

func (c *costCache) SetCost(tokenizer, hash string, tokens int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.puts++
	c.costs[tokenizer+"/"+hash] = tokens
}

// TestCatalogCostCache: a second Thinker over the same tools takes every
// cost from the cache (nothing is rendered) and reports the same total; a
// cost cached under another tokenizer is not used.
func TestCatalogCostCache(t *testing.T) {
	cache := &costCache{costs: map[string]int{}, tokenizers: map[string]bool{}}
	ix := newIndex(t, catalog...)
	first := newThinker(t, ix, think.Options{Costs: cache})
	tokens, n := first.CatalogCost()
	if n != len(catalog) || cache.puts != len(catalog) || cache.hits != 0 {
		t.Fatalf("first: %d tools, %d stored, %d hits", n, cache.puts, cache.hits)
	}
	second := newThinker(t, ix, think.Options{Costs: cache})
	off, err := second.Think(context.Background(), think.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if off.AllTokens != tokens || off.AllTools != n || cache.hits != len(catalog) || cache.puts != len(catalog) {
		t.Fatalf("second: %d tokens (want %d), %d hits, %d stored", off.AllTokens, tokens, cache.hits, cache.puts)
	}
	if !cache.tokenizers[tokenizer(t).ID()] || len(cache.tokenizers) != 1 {
		t.Errorf("costs keyed by %v, want the tokenizer's ID %q", cache.tokenizers, tokenizer(t).ID())
	}
	cl, err := budget.NewTokenizer("", budget.EncodingCL100K)
	if err != nil {
		t.Fatal(err)
	}
	third, err := think.New(ix, &think.Options{Costs: cache, Tokenizer: cl})
	if err != nil {
		t.Fatal(err)
	}
	if _, n := third.CatalogCost(); n != len(catalog) || cache.puts != 2*len(catalog) || !cache.tokenizers[cl.ID()] {
		t.Errorf("cl100k_base: %d stored, keys %v; want its own counts", cache.puts, cache.tokenizers)
	}
}

func TestNewRejects(t *testing.T) {
	ix := newIndex(t, catalog[:1]...)
	for _, o := range []think.Options{{Budget: -1}, {MinTools: 3, MaxTools: 2}, {Search: 9}, {Retrieval: retrieval.Options{K: -1}}} {
		if _, err := think.New(ix, &o); !errors.Is(err, think.ErrOptions) {
			t.Errorf("New(%+v) = %v, want ErrOptions", o, err)
		}
	}
	if _, err := think.New(nil, nil); !errors.Is(err, think.ErrOptions) {
		t.Errorf("New(nil) = %v, want ErrOptions", err)
	}
}

// TestWithPinned: the derived step pins the tools it names, over the same
// index and with the same options; the step it came from is unchanged.
func TestWithPinned(t *testing.T) {
	ix := newIndex(t, catalog...)
	base := newThinker(t, ix, think.Options{Budget: 200, Search: think.SearchAlways, Retrieval: retrieval.Options{K: 2, Pinned: []string{"get_weather"}}})
	pinned, err := base.WithPinned([]string{"read_file", "add_numbers"})
	if err != nil {
		t.Fatal(err)
	}
	if pinned.Index() != ix || base.Index() != ix {
		t.Error("WithPinned's Thinker ranks another index")
	}
	want := base.Options()
	want.Retrieval.Pinned = []string{"read_file", "add_numbers"}
	if diff := cmp.Diff(want, pinned.Options(), cmp.Comparer(func(a, b *budget.Tokenizer) bool { return a == b }), cmpopts.IgnoreUnexported(retrieval.Options{})); diff != "" {
		t.Errorf("options differ but for the pins (-want +got):\n%s", diff)
	}
	q := think.Request{Query: retrieval.Query{Task: "send an email"}}
	offered := func(th *think.Thinker) map[string]string {
		off, err := th.Think(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, o := range off.Tools {
			m[o.Tool.Name] = o.Reason
		}
		return m
	}
	got := offered(pinned)
	for _, n := range []string{"read_file", "add_numbers"} {
		if got[n] != think.ReasonPinned {
			t.Errorf("%s offered as %q by the derived step, want pinned (offer %v)", n, got[n], got)
		}
	}
	if _, ok := got["get_weather"]; ok && got["get_weather"] == think.ReasonPinned {
		t.Errorf("get_weather still pinned by the derived step: %v", got)
	}
	if b := offered(base); b["get_weather"] != think.ReasonPinned || b["read_file"] == think.ReasonPinned {
		t.Errorf("the base step changed: %v, want get_weather pinned, read_file not", b)
	}
}

// With a usage memory (Options.Retrieval.Usage), the step, search_tools'
// answer (Find) and Explain rank what the caller's earlier requests like
// this one led to: here by their words alone (the index has no sentence
// encoder).
func TestThinkLearns(t *testing.T) {
	ix := newIndex(t, catalog...)
	mem, err := usage.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	th := newThinker(t, ix, think.Options{Budget: 200, Retrieval: retrieval.Options{K: 2, Usage: mem}})
	ctx := usage.WithCaller(context.Background(), usage.Caller{Identity: "ann"})
	// Ann means the days ahead when she asks for the weather.
	const ask = "the weather in bern"
	before, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: ask}})
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Ranked) == 0 || before.Ranked[0].Tool.Name == "get_forecast" {
		t.Fatalf("before any call get_forecast ranks first (%v): the test no longer shows what the memory adds", matchNames(before.Ranked))
	}
	if err := th.Retriever().Record(ctx, "weather in bern please", "get_forecast", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	off, err := th.Think(ctx, think.Request{Query: retrieval.Query{Task: ask}})
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Ranked) == 0 || off.Ranked[0].Tool.Name != "get_forecast" || !slices.Contains(off.Names(), "get_forecast") {
		t.Errorf("after the call: ranked %v, offered %v (before: ranked %v); want get_forecast first and offered", matchNames(off.Ranked), off.Names(), matchNames(before.Ranked))
	}
	ans, _, err := th.Find(ctx, ask, 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ans.Tools) != 1 || ans.Tools[0].Name != "get_forecast" {
		t.Errorf("Find: %+v, want get_forecast", ans.Tools)
	}
	ex, err := th.Explain(ctx, think.Request{Query: retrieval.Query{Task: ask}}, "get_forecast")
	if err != nil {
		t.Fatal(err)
	}
	if u := ex.Tools[0].Usage; u.Calls != 1 || u.Lift <= 0 {
		t.Errorf("Explain: get_forecast learned %+v, want 1 call and a lift", u)
	}
}
