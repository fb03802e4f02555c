package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/agenttest"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/retrieval"
)

func newResponses(t *testing.T, url string, o agent.ResponsesOptions) *agent.Responses {
	t.Helper()
	o.Options = provider.Options{BaseURL: url, APIKey: "test-key", MaxRetries: -1}
	m, err := agent.NewResponses("test-model", &o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// deltas reassembles what OnDelta received: the text and each tool call.
type deltas struct {
	text  strings.Builder
	calls []agent.ToolCall
	n     int
}

func (d *deltas) add(x agent.Delta) {
	d.n++
	if !x.Tool {
		d.text.WriteString(x.Text)
		return
	}
	for len(d.calls) <= x.Index {
		d.calls = append(d.calls, agent.ToolCall{})
	}
	c := &d.calls[x.Index]
	if x.ID != "" {
		c.ID = x.ID
	}
	if x.Name != "" {
		c.Name = x.Name
	}
	c.Arguments += x.Arguments
}

// TestResponsesComplete runs replies through the JSON and the streaming
// paths: text, function calls, the API's tool search, usage with cached
// tokens, and (streaming) the deltas, which add up to the reply.
func TestResponsesComplete(t *testing.T) {
	replies := []agenttest.Reply{
		{Content: "Hello, wörld!", Usage: &agent.Usage{PromptTokens: 100, CachedPromptTokens: 64, CompletionTokens: 5}},
		{Content: "Let me look.", ToolCalls: []agent.ToolCall{
			{ID: "c1", Name: "t__get_weather", Arguments: `{"city":"Bern"}`},
			{ID: "c2", Name: "t__get_forecast", Arguments: `{"city":"Zürich","days":2}`},
		}, ChunkSize: 1},
		{ToolCalls: []agent.ToolCall{{ID: "s1", Search: true, Arguments: `{"query":"currency"}`}}},
	}
	want := []agent.Response{
		{Message: agent.Message{Role: agent.RoleAssistant, Content: "Hello, wörld!"}, FinishReason: "stop",
			Usage: agent.Usage{PromptTokens: 100, CachedPromptTokens: 64, CompletionTokens: 5, TotalTokens: 105}, Model: "test-model"},
		{Message: agent.Message{Role: agent.RoleAssistant, Content: "Let me look.", ToolCalls: []agent.ToolCall{
			{ID: "c1", Name: "t__get_weather", Arguments: `{"city":"Bern"}`},
			{ID: "c2", Name: "t__get_forecast", Arguments: `{"city":"Zürich","days":2}`},
		}}, FinishReason: "tool_calls", Model: "test-model"},
		{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
			{ID: "s1", Name: retrieval.SearchToolName, Search: true, Arguments: `{"query":"currency"}`},
		}}, FinishReason: "tool_calls", Model: "test-model"},
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			srv := agenttest.NewResponsesServer(replies...)
			defer srv.Close()
			m := newResponses(t, srv.URL, agent.ResponsesOptions{Stream: stream})
			for i, w := range want {
				var d deltas
				got, err := m.Complete(context.Background(), agent.Request{
					Messages: []agent.Message{{Role: agent.RoleSystem, Content: "sys"}, {Role: agent.RoleUser, Content: "hi"}},
					OnDelta:  d.add,
				})
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 {
					w.Usage = got.Usage // reported from the request size
				}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Errorf("reply %d (-want +got):\n%s", i, diff)
				}
				if !stream {
					if d.n != 0 {
						t.Errorf("reply %d: %d deltas without streaming", i, d.n)
					}
					continue
				}
				if d.text.String() != w.Message.Content {
					t.Errorf("reply %d: streamed text %q, want %q", i, d.text.String(), w.Message.Content)
				}
				wc := slices.Clone(w.Message.ToolCalls)
				for j := range wc {
					wc[j].Search = false
				}
				if diff := cmp.Diff(wc, d.calls); diff != "" {
					t.Errorf("reply %d: streamed calls (-want +got):\n%s", i, diff)
				}
			}
			for _, r := range srv.Requests() {
				if r.Stream != stream || r.Store == nil || *r.Store {
					t.Errorf("request stream=%v store=%v, want stream=%v store=false", r.Stream, r.Store, stream)
				}
				if len(r.Input) != 2 || r.Input[0].Role != "system" || r.Input[1].Text != "hi" {
					t.Errorf("input %+v", r.Input)
				}
			}
		})
	}
}

// TestResponsesErrors: an HTTP error stays reachable as *openai.Error; a
// failed response names its reason.
func TestResponsesErrors(t *testing.T) {
	srv := agenttest.NewResponsesServer(agenttest.Reply{Status: http.StatusTooManyRequests, Content: "slow down"})
	defer srv.Close()
	_, err := newResponses(t, srv.URL, agent.ResponsesOptions{}).Complete(context.Background(), agent.Request{
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "hi"}}})
	var apiErr *openai.Error
	if !errors.Is(err, agent.ErrModel) || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("err = %v, want ErrModel wrapping a 429 *openai.Error", err)
	}
	for _, o := range []agent.ResponsesOptions{
		{Hosted: []agent.HostedMCP{{Server: "x"}}},
		{Hosted: []agent.HostedMCP{{URL: "https://x.example/mcp"}}},
		{Hosted: []agent.HostedMCP{{Server: "x", URL: "https://x.example/mcp"}, {Server: "y", Label: "x", URL: "https://y.example/mcp"}}},
	} {
		o.Options = provider.Options{BaseURL: srv.URL, APIKey: "k"}
		if _, err := agent.NewResponses("m", &o); !errors.Is(err, agent.ErrOptions) {
			t.Errorf("NewResponses(%+v) = %v, want ErrOptions", o.Hosted, err)
		}
	}
}

// TestResponsesDeferred runs the agent against the scripted Responses
// server: the catalog goes as deferred functions beside the first step's
// loaded tools and a client tool_search tool; the model's tool_search_call
// is answered by toolsift's search with a tool_search_output holding the
// found tool's definition; the found tool is then called; every request
// repeats the previous one's tools and input and only appends.
func TestResponsesDeferred(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			f := newFixture(t, catalog(), 3)
			srv := agenttest.NewResponsesServer(
				agenttest.Reply{ToolCalls: []agent.ToolCall{{ID: "ts_1", Search: true, Arguments: `{"query":"convert money between currencies"}`}}},
				agenttest.Reply{ToolCalls: []agent.ToolCall{{ID: "fc_2", Name: "t__convert_currency", Arguments: `{"amount":10,"from":"EUR","to":"CHF"}`}}},
				agenttest.Reply{Content: "10 EUR are about 9.4 CHF.", Usage: &agent.Usage{PromptTokens: 900, CachedPromptTokens: 768, CompletionTokens: 9}},
			)
			defer srv.Close()
			var ev events
			a, err := agent.New(newResponses(t, srv.URL, agent.ResponsesOptions{Stream: stream}), f.TS,
				&agent.Options{Tokenizer: tokenizer(t), OnEvent: ev.add})
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), "What is the weather in Bern?")
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			first := reqs[0]
			loaded, deferred := first.ToolNames(), first.DeferredNames()
			if len(loaded) < 2 || loaded[len(loaded)-1] != "tool_search" {
				t.Fatalf("loaded tools %q, want the step's tools and tool_search last", loaded)
			}
			if len(loaded)-1+len(deferred) != len(catalog()) || !slices.Contains(deferred, "t__convert_currency") {
				t.Errorf("loaded %q and deferred %q, want the catalog between them", loaded, deferred)
			}
			for _, tl := range first.Tools {
				switch {
				case tl.Type == "tool_search":
					if tl.Execution != "client" || !strings.Contains(string(tl.Parameters), `"query"`) || tl.Description == "" {
						t.Errorf("tool_search tool %+v", tl)
					}
				case tl.Type != "function" || tl.Strict == nil || *tl.Strict:
					t.Errorf("tool %s: type %q strict %v, want a function with strict false", tl.Name, tl.Type, tl.Strict)
				}
			}
			// Each request's tools are the first's, its input the previous
			// one's plus new items.
			for i := 1; i < len(reqs); i++ {
				if diff := cmp.Diff(first.Tools, reqs[i].Tools); diff != "" {
					t.Errorf("request %d: tools changed (-first +now):\n%s", i+1, diff)
				}
				prev, now := reqs[i-1].Input, reqs[i].Input
				if len(now) <= len(prev) || !cmp.Equal(prev, now[:len(prev)]) {
					t.Errorf("request %d does not extend request %d's input", i+1, i)
				}
			}
			in := reqs[1].Input
			call, out := in[len(in)-2], in[len(in)-1]
			if call.Type != "tool_search_call" || call.CallID != "ts_1" || call.Execution != "client" ||
				!strings.Contains(string(call.Arguments), `"query"`) || call.Arguments[0] != '{' {
				t.Errorf("search call item %+v", call)
			}
			if out.Type != "tool_search_output" || out.CallID != "ts_1" || out.Execution != "client" ||
				len(out.Tools) == 0 || out.Tools[0].Name != "t__convert_currency" || !out.Tools[0].DeferLoading ||
				!strings.Contains(string(out.Tools[0].Parameters), `"amount"`) {
				t.Errorf("search output item %+v", out)
			}
			in = reqs[2].Input
			if fo := in[len(in)-1]; fo.Type != "function_call_output" || fo.CallID != "fc_2" || !strings.Contains(string(fo.Output), "convert_currency ok") {
				t.Errorf("function output item %+v", fo)
			}
			if got := f.Calls(); len(got) != 1 || got[0].Tool != "convert_currency" {
				t.Errorf("tool calls %+v", got)
			}
			if res.Answer != "10 EUR are about 9.4 CHF." || res.Steps[2].Usage.CachedPromptTokens != 768 {
				t.Errorf("answer %q, usage %+v", res.Answer, res.Steps[2].Usage)
			}
			var streamed strings.Builder
			for _, e := range ev.all {
				if e.Kind == agent.EventDelta && !e.Delta.Tool {
					streamed.WriteString(e.Delta.Text)
				}
			}
			if want := map[bool]string{true: res.Answer}[stream]; streamed.String() != want {
				t.Errorf("delta events spell %q, want %q", streamed.String(), want)
			}
		})
	}
}

// TestResponsesHosted: the offered tools of a hosted server go in the mcp
// tool's allowed_tools under their names on the server, not as functions;
// the provider's mcp_call comes back on the assistant message, makes the
// tool sticky, and is sent back as an mcp_call item.
func TestResponsesHosted(t *testing.T) {
	f := newFixture(t, catalog(), 3)
	srv := agenttest.NewResponsesServer(
		agenttest.Reply{Hosted: []agent.HostedCall{{Server: "weather", Name: "get_weather", Arguments: `{"city":"Bern"}`, Output: "sunny, 21 °C"}},
			Content: "Sunny, 21 °C."},
		agenttest.Reply{Content: "Still sunny."},
	)
	defer srv.Close()
	m := newResponses(t, srv.URL, agent.ResponsesOptions{NoDefer: true, Hosted: []agent.HostedMCP{{
		Server: "t", Label: "weather", URL: "https://mcp.example/weather", Headers: map[string]string{"Authorization": "Bearer s3cret"},
	}}})
	a, err := agent.New(m, f.TS, &agent.Options{Tokenizer: tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "What is the weather in Bern?")
	if err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[0]
	var mcpTool *agenttest.ResponsesTool
	for i, tl := range req.Tools {
		if tl.Type == "mcp" {
			mcpTool = &req.Tools[i]
		} else if strings.HasPrefix(tl.Name, "t__") {
			t.Errorf("hosted tool %s sent as a function", tl.Name)
		}
	}
	if mcpTool == nil {
		t.Fatalf("no mcp tool in %q", req.ToolNames())
	}
	var offered []string
	for _, o := range res.Steps[0].Offered {
		if o.Name != retrieval.SearchToolName {
			offered = append(offered, strings.TrimPrefix(o.Name, "t__"))
		}
	}
	if diff := cmp.Diff(offered, mcpTool.AllowedTools); diff != "" || !slices.Contains(offered, "get_weather") {
		t.Errorf("allowed_tools (-offered +sent):\n%s", diff)
	}
	if mcpTool.ServerLabel != "weather" || mcpTool.ServerURL != "https://mcp.example/weather" ||
		mcpTool.Headers["Authorization"] != "Bearer s3cret" || string(mcpTool.RequireApproval) != `"never"` {
		t.Errorf("mcp tool %+v", mcpTool)
	}
	msg := res.Steps[0].Message
	if len(msg.Hosted) != 1 || msg.Hosted[0].Tool != "t__get_weather" || msg.Hosted[0].Output != "sunny, 21 °C" || res.Answer != "Sunny, 21 °C." {
		t.Errorf("message %+v", msg)
	}
	if !slices.Contains(res.Used, "t__get_weather") {
		t.Errorf("used %q, want the hosted call's tool", res.Used)
	}
	if len(f.Calls()) != 0 {
		t.Errorf("the agent ran %+v; the provider runs hosted calls", f.Calls())
	}
	if _, err := a.Continue(context.Background(), res, "And now?"); err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, it := range srv.Requests()[1].Input {
		items = append(items, it.Type+":"+it.Role)
	}
	if diff := cmp.Diff([]string{"message:system", "message:user", "mcp_call:", "message:assistant", "message:user"}, items); diff != "" {
		t.Errorf("second turn's input (-want +got):\n%s", diff)
	}
	hc := srv.Requests()[1].Input[2]
	var args string
	_ = json.Unmarshal(hc.Arguments, &args)
	if hc.ServerLabel != "weather" || hc.Name != "get_weather" || args != `{"city":"Bern"}` || !strings.Contains(string(hc.Output), "sunny") {
		t.Errorf("mcp_call item %+v", hc)
	}
}
