package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/toolindex"
	"github.com/toolsift/toolsift/upstream"
)

// waitLimit bounds every wait in these tests: a hang guard that scales with
// the test binary's -timeout, not a timing assertion (testenv.WaitLimit).
var waitLimit = testenv.WaitLimit

// TestMain keeps the caches in a folder of this run, not the user's, and
// fails the run on leaked goroutines (see testenv.Main).
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// tokenizer is shared by the tests (testenv.Tokenizer).
var tokenizer = testenv.Tokenizer

// call is one tool invocation seen by a handler.
type call struct {
	Tool string
	Args string
}

// fixture is a real tool stack: local Go tools served by an MCP server over
// in-memory transports, opened as a toolsift.Toolset (Hub, index, Think
// step).
type fixture struct {
	TS        *toolsift.Toolset
	Index     *toolindex.Index
	Retriever *retrieval.Retriever

	mu    sync.Mutex
	calls []call
}

func (f *fixture) Tools() agent.Tools { return f.TS }

// Calls returns the handler invocations so far, in order.
func (f *fixture) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fixture) record(tool string, args json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{tool, string(args)})
}

// spec is a test tool: its description and, optionally, a handler (the
// default answers "<tool> ok").
type spec struct {
	name, desc string
	params     string
	handler    func(ctx context.Context, args json.RawMessage) (string, error)
}

// catalog is a small but varied tool catalog; every tool takes a few typed
// parameters, so offering all of them costs a few thousand tokens.
func catalog() []spec {
	return []spec{
		{name: "get_weather", desc: "Get the current weather (temperature, wind, sky) for a city.", params: `"city":{"type":"string","description":"City name, e.g. Bern"}`},
		{name: "get_forecast", desc: "Get the weather forecast for the next days for a city.", params: `"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":10}`},
		{name: "get_air_quality", desc: "Get the air quality index and pollen levels for a city.", params: `"city":{"type":"string"}`},
		{name: "send_email", desc: "Send an email message to a recipient with a subject and a body.", params: `"to":{"type":"string","description":"Recipient email address"},"subject":{"type":"string"},"body":{"type":"string"}`},
		{name: "list_emails", desc: "List the emails in the inbox, newest first.", params: `"folder":{"type":"string"},"limit":{"type":"integer"}`},
		{name: "delete_email", desc: "Delete an email by its id.", params: `"id":{"type":"string"}`},
		{name: "create_event", desc: "Create a calendar event with a title, a start time and attendees.", params: `"title":{"type":"string"},"start":{"type":"string","format":"date-time"},"attendees":{"type":"array","items":{"type":"string"}}`},
		{name: "list_events", desc: "List calendar events between two dates.", params: `"from":{"type":"string"},"to":{"type":"string"}`},
		{name: "read_file", desc: "Read a text file from the workspace.", params: `"path":{"type":"string"}`},
		{name: "write_file", desc: "Write text to a file in the workspace, replacing it.", params: `"path":{"type":"string"},"content":{"type":"string"}`},
		{name: "list_directory", desc: "List the files of a workspace directory.", params: `"path":{"type":"string"}`},
		{name: "add_numbers", desc: "Add two numbers and return the sum.", params: `"a":{"type":"number"},"b":{"type":"number"}`},
		{name: "multiply_numbers", desc: "Multiply two numbers and return the product.", params: `"a":{"type":"number"},"b":{"type":"number"}`},
		{name: "get_stock_price", desc: "Get the latest stock price for a ticker symbol.", params: `"symbol":{"type":"string","description":"Ticker, e.g. AAPL"}`},
		{name: "translate_text", desc: "Translate text into another language.", params: `"text":{"type":"string"},"target_language":{"type":"string"}`},
		{name: "get_directions", desc: "Get driving or walking directions between two places.", params: `"from":{"type":"string"},"to":{"type":"string"},"mode":{"type":"string","enum":["driving","walking","transit"]}`},
		{name: "geocode_address", desc: "Turn a street address into latitude and longitude.", params: `"address":{"type":"string"}`},
		{name: "create_issue", desc: "Create an issue in a GitHub repository.", params: `"repo":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"}`},
		{name: "list_pull_requests", desc: "List the open pull requests of a GitHub repository.", params: `"repo":{"type":"string"}`},
		{name: "run_sql_query", desc: "Run a read-only SQL query against the analytics database.", params: `"sql":{"type":"string"}`},
		{name: "create_note", desc: "Create a note with a title and text in the notebook.", params: `"title":{"type":"string"},"text":{"type":"string"}`},
		{name: "search_notes", desc: "Search the notebook for notes containing words.", params: `"query":{"type":"string"}`},
		{name: "set_timer", desc: "Set a countdown timer for a number of minutes.", params: `"minutes":{"type":"integer"}`},
		{name: "fetch_url", desc: "Fetch a web page and return its text.", params: `"url":{"type":"string","format":"uri"}`},
		{name: "play_music", desc: "Play a song or a playlist on the speakers.", params: `"query":{"type":"string"}`},
		{name: "convert_currency", desc: "Convert an amount of money from one currency to another.", params: `"amount":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}`},
	}
}

// fixtureBudget is less than the test catalog's 1289 tokens, so that
// retrieval decides what is offered, and more than a step needs.
const fixtureBudget = 1000

// newFixture serves specs (plus extra) as the local server "t" and indexes
// them; tools are named "t__<name>". K is the retriever's K (0: default);
// the budget is fixtureBudget.
func newFixture(t *testing.T, specs []spec, k int) *fixture {
	t.Helper()
	// checkSteps is the oracle of a fresh choice at every step; the
	// stable policy has its own tests (cache_test.go). Its oracle is "the
	// retriever's K tools, at full tier": budget packing (think's default,
	// tested by think.TestPack) would add the ranks after K, compressed,
	// as far as the budget goes, and leave no tool of this small catalog
	// for search_tools to find.
	return newFixtureWith(t, specs, think.Options{Budget: fixtureBudget, NoPack: true, Retrieval: retrieval.Options{K: k}, Policy: think.PolicyFresh})
}

// newFixtureWith is newFixture with the Think step's options.
func newFixtureWith(t *testing.T, specs []spec, to think.Options) *fixture {
	t.Helper()
	f := &fixture{}
	var local []upstream.LocalTool
	for _, s := range specs {
		h := s.handler
		name := s.name
		if h == nil {
			h = func(context.Context, json.RawMessage) (string, error) { return name + " ok", nil }
		}
		local = append(local, upstream.LocalTool{
			Name:        s.name,
			Description: s.desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{` + s.params + `}}`),
			Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
				f.record(name, args)
				return h(ctx, args)
			},
		})
	}
	sc, err := upstream.LocalServer(local...)
	if err != nil {
		t.Fatal(err)
	}
	to.Tokenizer = tokenizer(t)
	th := newThinker(t, to)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	ts, err := toolsift.OpenConfig(ctx, &config.Config{Servers: map[string]config.Server{"t": sc}}, &toolsift.Options{Thinker: th})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.Close() })
	f.TS, f.Index, f.Retriever = ts, th.Index(), th.Retriever()
	if f.Index.Len() != len(specs) {
		t.Fatalf("index has %d tools, want %d (status %+v)", f.Index.Len(), len(specs), f.TS.Status())
	}
	return f
}

// index builds an Index and a Retriever over tools.
func index(t testing.TB, tools []tool.Tool, k int) (*toolindex.Index, *retrieval.Retriever) {
	t.Helper()
	ix := testenv.Index(t, nil, nil, tools...)
	r, err := retrieval.New(ix, &retrieval.Options{K: k})
	if err != nil {
		t.Fatal(err)
	}
	return ix, r
}

// newAgent returns an agent over f talking to srv.
func newAgent(t *testing.T, srv *agenttest.Server, f *fixture, stream bool, opts *agent.Options) *agent.Agent {
	t.Helper()
	var o agent.Options
	if opts != nil {
		o = *opts
	}
	o.Tokenizer = tokenizer(t)
	a, err := agent.New(newOpenAI(t, srv.URL, stream), f.Tools(), &o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// events collects an agent's events.
type events struct {
	mu  sync.Mutex
	all []agent.Event
}

func (e *events) add(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		out = append(out, fmt.Sprintf("%d:%s", ev.Step, ev.Kind))
	}
	return out
}

// lastMessages returns the messages of request i after the system prompt
// and the user's task.
func toolMessages(req agenttest.Request) []tool.Message {
	var out []tool.Message
	for _, m := range req.Messages {
		if m.Role == tool.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// stepTools are the tools a step offered, all and those offered as found.
type stepTools struct {
	names, found []string
}

// checkSteps checks every step's request against the step's record and
// against what the real retriever ranks for the step's query: exactly the
// retrieved, pinned and sticky tools, plus the tools found at the previous
// step, plus search_tools when search is on, sorted by name with
// search_tools last. The budget must be large enough to hold them all.
func checkSteps(t *testing.T, f *fixture, srv *agenttest.Server, res *agent.Result, search bool) []stepTools {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != len(res.Steps) {
		t.Fatalf("%d requests for %d steps", len(reqs), len(res.Steps))
	}
	var out []stepTools
	var prevFound []string
	for i, st := range res.Steps {
		sent := reqs[i].ToolNames()
		var recorded []string
		for _, o := range st.Offered {
			recorded = append(recorded, o.Name)
		}
		if diff := cmp.Diff(recorded, sent); diff != "" {
			t.Errorf("step %d: request's tools differ from Step.Offered (-recorded +sent):\n%s", st.N, diff)
		}
		matches, err := f.Retriever.Retrieve(context.Background(), st.Query)
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, m := range matches {
			set[m.Tool.Name] = true
		}
		for _, name := range prevFound {
			set[name] = true
		}
		want := slices.Sorted(maps.Keys(set))
		if search {
			want = append(want, think.SearchToolName)
		}
		if diff := cmp.Diff(want, sent, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d: tools sent (-want +got):\n%s", st.N, diff)
		}
		var st2 stepTools
		st2.names = sent
		for _, o := range st.Offered {
			wantReason := think.ReasonRetrieved
			switch {
			case o.Name == think.SearchToolName:
				wantReason = think.ReasonMeta
			case slices.Contains(st.Query.Used, o.Name):
				wantReason = think.ReasonSticky
			case slices.Contains(prevFound, o.Name):
				wantReason = think.ReasonFound
			}
			if o.Reason != wantReason {
				t.Errorf("step %d: %s offered as %s, want %s", st.N, o.Name, o.Reason, wantReason)
			}
			if o.Reason == think.ReasonFound {
				st2.found = append(st2.found, o.Name)
			}
		}
		out = append(out, st2)
		prevFound = nil
		for _, c := range st.Calls {
			prevFound = append(prevFound, c.Found...)
		}
	}
	return out
}

// newThinker is a Think step with to over an empty index of the library's
// embedders (toolsift.DefaultEmbedders), for toolsift.Options.Thinker.
func newThinker(t testing.TB, to think.Options) *think.Thinker {
	t.Helper()
	vector, semantic, err := toolsift.DefaultEmbedders()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := toolindex.New(vector, &toolindex.Options{Semantic: semantic})
	if err != nil {
		t.Fatal(err)
	}
	th, err := think.New(ix, &to)
	if err != nil {
		t.Fatal(err)
	}
	return th
}
