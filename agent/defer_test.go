package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/budget"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

// deferModel is a fake DeferringModel: it answers from a script and keeps
// every request. The wire forms are the adapters' tests; this one holds the
// Agent's side of the contract.
type deferModel struct {
	defers bool
	mu     sync.Mutex
	script []agent.Response
	reqs   []agent.Request
}

func (m *deferModel) DefersTools() bool { return m.defers }

func (m *deferModel) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	if len(m.script) == 0 {
		return agent.Response{}, errors.New("script exhausted")
	}
	r := m.script[0]
	m.script = m.script[1:]
	return r, nil
}

func names(defs []agent.ToolDef) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// TestDeferredTools: with a DeferringModel and a catalog larger than the
// budget, the first step's tools are loaded for the whole run, the rest of
// the catalog goes deferred (by name, the same at every step), the API's
// own search (a Search call) is answered by toolsift's search_tools with
// Found on the tool message, and a found tool can then be called.
func TestDeferredTools(t *testing.T) {
	f := newFixture(t, catalog(), 3)
	m := &deferModel{defers: true, script: []agent.Response{
		{Message: tool.Message{ToolCalls: []tool.ToolCall{{ID: "ts_1", Name: "tool_search", Search: true, Arguments: `{"query":"convert money between currencies"}`}}}},
		{Message: tool.Message{ToolCalls: []tool.ToolCall{{ID: "c_2", Name: "t__convert_currency", Arguments: `{"amount":10,"from":"EUR","to":"CHF"}`}}}},
		{Message: tool.Message{Content: "10 EUR are about 9.4 CHF."}},
	}}
	a, err := agent.New(m, f.TS, &agent.Options{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "What is the weather in Bern?")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(m.reqs))
	}
	first := m.reqs[0]
	loaded := names(first.Tools)
	if len(loaded) == 0 || loaded[len(loaded)-1] != think.SearchToolName {
		t.Fatalf("loaded tools %q, want search_tools last", loaded)
	}
	deferred := names(first.Deferred)
	if !slices.IsSorted(deferred) {
		t.Errorf("deferred tools not by name: %q", deferred)
	}
	if got, want := len(loaded)-1+len(deferred), len(catalog()); got != want {
		t.Errorf("%d loaded + %d deferred tools, want the catalog's %d", len(loaded)-1, len(deferred), want)
	}
	for _, n := range loaded {
		if slices.Contains(deferred, n) {
			t.Errorf("%s both loaded and deferred", n)
		}
	}
	if !slices.Contains(deferred, "t__convert_currency") {
		t.Errorf("t__convert_currency not deferred: %q", deferred)
	}
	for _, d := range first.Deferred {
		if len(d.Parameters) == 0 || d.Description == "" {
			t.Errorf("deferred %s without full definition: %+v", d.Name, d)
		}
	}
	for i, r := range m.reqs[1:] {
		if diff := cmp.Diff(first.Tools, r.Tools); diff != "" {
			t.Errorf("request %d: loaded tools changed (-first +now):\n%s", i+2, diff)
		}
		if diff := cmp.Diff(first.Deferred, r.Deferred); diff != "" {
			t.Errorf("request %d: deferred tools changed (-first +now):\n%s", i+2, diff)
		}
		if diff := cmp.Diff(m.reqs[i].Messages, r.Messages[:len(m.reqs[i].Messages)]); diff != "" {
			t.Errorf("request %d does not extend request %d's messages (-before +now):\n%s", i+2, i+1, diff)
		}
	}
	// The search call, renamed to search_tools and answered with Found.
	asked := m.reqs[1].Messages
	call := asked[len(asked)-2].ToolCalls[0]
	if !call.Search || call.Name != think.SearchToolName || call.ID != "ts_1" {
		t.Errorf("search call in the conversation: %+v", call)
	}
	answer := asked[len(asked)-1]
	if answer.Role != tool.RoleTool || answer.ToolCallID != "ts_1" || len(answer.Found) == 0 || answer.Found[0] != "t__convert_currency" {
		t.Errorf("search answer: %+v", answer)
	}
	st := res.Steps
	if !st[1].Calls[0].Offered {
		t.Error("the call of a tool the search loaded is not counted as offered")
	}
	if st[0].Calls[0].Outcome != agent.OutcomeSearch || st[1].Calls[0].Outcome != agent.OutcomeOK {
		t.Errorf("outcomes %s, %s", st[0].Calls[0].Outcome, st[1].Calls[0].Outcome)
	}
	for _, s := range st {
		if s.DeferredTools != len(deferred) || s.DeferredTokens <= 0 {
			t.Errorf("step %d: %d deferred tools (%d tokens), want %d", s.N, s.DeferredTools, s.DeferredTokens, len(deferred))
		}
	}
	if got := f.Calls(); len(got) != 1 || got[0].Tool != "convert_currency" {
		t.Errorf("tool calls %+v", got)
	}
	if res.Answer != "10 EUR are about 9.4 CHF." {
		t.Errorf("answer %q", res.Answer)
	}
}

// TestDeferredToolsNot: per-step selection whenever deferring does not
// apply: the model says it does not defer, the catalog is over
// MaxDeferredTokens, or deferring is turned off.
func TestDeferredToolsNot(t *testing.T) {
	f := newFixture(t, catalog(), 3)
	for _, tc := range []struct {
		name   string
		defers bool
		max    int
	}{
		{"model does not defer", false, 0},
		{"catalog over the cap", true, 100},
		{"turned off", true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &deferModel{defers: tc.defers, script: []agent.Response{{Message: tool.Message{Content: "sunny"}}}}
			a, err := agent.New(m, f.TS, &agent.Options{Tokenizer: tokenizer(t), MaxDeferredTokens: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), "What is the weather in Bern?")
			if err != nil {
				t.Fatal(err)
			}
			if d := m.reqs[0].Deferred; d != nil || res.Steps[0].DeferredTools != 0 {
				t.Errorf("deferred %q", names(d))
			}
			if len(m.reqs[0].Tools) == 0 {
				t.Error("no tools offered")
			}
		})
	}
}

// TestChatDoesNotDefer: the Chat Completions model is not a
// DeferringModel, so it always gets per-step selection.
func TestChatDoesNotDefer(t *testing.T) {
	var m agent.Model = newOpenAI(t, "http://127.0.0.1:1/v1", false)
	if _, ok := m.(agent.DeferringModel); ok {
		t.Error("*openaimodel.Chat is a DeferringModel; Chat Completions has no deferred tools")
	}
	var r agent.Model = newResponses(t, "http://127.0.0.1:1/v1", openaimodel.ResponsesOptions{})
	if d, ok := r.(agent.DeferringModel); !ok || !d.DefersTools() {
		t.Error("*openaimodel.Responses does not defer tools")
	}
	if newResponses(t, "http://127.0.0.1:1/v1", openaimodel.ResponsesOptions{NoDefer: true}).DefersTools() {
		t.Error("NoDefer: still defers")
	}
}

// TestDeferredSearchBudget: a search loads at most the Think step's budget
// of deferred definitions, best first, and its answer names only those.
func TestDeferredSearchBudget(t *testing.T) {
	f := newFixtureWith(t, catalog(), think.Options{Budget: 300, Retrieval: retrieval.Options{K: 2}})
	m := &deferModel{defers: true, script: []agent.Response{
		{Message: tool.Message{ToolCalls: []tool.ToolCall{{ID: "s", Search: true, Name: "tool_search", Arguments: `{"query":"get list create send read write","k":20}`}}}},
		{Message: tool.Message{Content: "done"}},
	}}
	a, err := agent.New(m, f.TS, &agent.Options{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "What is the weather in Bern?")
	if err != nil {
		t.Fatal(err)
	}
	c := res.Steps[0].Calls[0]
	if c.Outcome != agent.OutcomeSearch || len(c.Found) == 0 {
		t.Fatalf("search: %+v", c)
	}
	// What the search would find unbudgeted.
	_, all, err := f.TS.SearchTools(context.Background(), json.RawMessage(`{"query":"get list create send read write","k":20}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Found) >= len(all) {
		t.Fatalf("found %d of %d: nothing cut by the 300-token budget", len(c.Found), len(all))
	}
	cost := map[string]int{}
	for _, tl := range f.TS.Tools() {
		r, err := tokenizer(t).CountTool(tl, budget.TierFull)
		if err != nil {
			t.Fatal(err)
		}
		cost[tl.Name] = r.Tokens
	}
	loaded := names(m.reqs[0].Tools)
	spent := 0
	// Found keeps the ranking's order, and leaves out only deferred tools.
	j := 0
	for _, m := range all {
		if j < len(c.Found) && c.Found[j] == m.Tool.Name {
			j++
			if !slices.Contains(loaded, m.Tool.Name) {
				spent += cost[m.Tool.Name]
			}
		} else if slices.Contains(loaded, m.Tool.Name) {
			t.Errorf("%s, loaded already, left out of Found", m.Tool.Name)
		}
	}
	if j != len(c.Found) {
		t.Errorf("Found %q is not in the ranking's order", c.Found)
	}
	if spent > 300 {
		t.Errorf("the search loads %d tokens of definitions, budget 300", spent)
	}
	var answer struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(c.Observation), &answer); err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, tl := range answer.Tools {
		told = append(told, tl.Name)
	}
	if diff := cmp.Diff(c.Found, told); diff != "" {
		t.Errorf("the answer's tools differ from Found (-found +told):\n%s", diff)
	}
}

// TestDeferredToolsListed: a tool the first step lists (budget.TierName,
// no parameters) is not loaded for the run as a listing: it goes with the
// deferred tools, whole, so that the API's search loads its schema.
func TestDeferredToolsListed(t *testing.T) {
	f := newFixtureWith(t, catalog(), think.Options{Budget: 350, Retrieval: retrieval.Options{K: 3}, Policy: think.PolicyFresh, Listing: true})
	const task = "email the weather forecast for Bern to my team"
	off, err := f.TS.Think(context.Background(), think.Request{Query: retrieval.Query{Task: task}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, o := range off.Tools {
		if o.Tier == budget.TierName {
			listed = append(listed, o.Tool.Name)
		}
	}
	if len(listed) == 0 {
		t.Fatalf("the step lists no tool (offered %v): the test needs one", names(toDefs(off)))
	}
	m := &deferModel{defers: true, script: []agent.Response{{Message: tool.Message{Content: "done"}}}}
	a, err := agent.New(m, f.TS, &agent.Options{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	first := m.reqs[0]
	for _, n := range listed {
		if slices.Contains(names(first.Tools), n) {
			t.Errorf("listed %s loaded for the run: %v", n, names(first.Tools))
		}
		i := slices.IndexFunc(first.Deferred, func(d agent.ToolDef) bool { return d.Name == n })
		if i < 0 || string(first.Deferred[i].Parameters) == `{"properties":{},"type":"object"}` {
			t.Errorf("listed %s not deferred whole: %v", n, names(first.Deferred))
		}
	}
}

func toDefs(off think.Offer) []agent.ToolDef {
	var out []agent.ToolDef
	for _, o := range off.Tools {
		out = append(out, agent.ToolDef{Name: o.Tool.Name + "@" + o.Tier.String()})
	}
	return out
}
