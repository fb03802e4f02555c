package agent_test

// The loop with the OpenAI models of agent/openaimodel: deferred tools and
// hosted MCP servers over the Responses API, and a custom Model's errors.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

func newOpenAI(t *testing.T, url string, stream bool) *openaimodel.Chat {
	t.Helper()
	m, err := openaimodel.NewChat("test-model", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: url, APIKey: "test-key", MaxRetries: -1}, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newResponses(t *testing.T, url string, o openaimodel.ResponsesOptions) *openaimodel.Responses {
	t.Helper()
	o.Options = provider.Options{BaseURL: url, APIKey: "test-key", MaxRetries: -1}
	m, err := openaimodel.NewResponses("test-model", &o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// jsonEqual compares JSON texts by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

func TestCustomModelErrors(t *testing.T) {
	a, err := agent.New(failingModel{}, nilTools{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "x"); !errors.Is(err, agent.ErrModel) || !errors.Is(err, errFailing) {
		t.Fatalf("err = %v, want ErrModel wrapping the model's own error", err)
	}
}

var errFailing = errors.New("custom model failed")

type failingModel struct{}

func (failingModel) Complete(context.Context, agent.Request) (agent.Response, error) {
	return agent.Response{}, errFailing
}

// nilTools offers nothing and calls nothing.
type nilTools struct{}

func (nilTools) Think(context.Context, think.Request) (think.Offer, error) { return think.Offer{}, nil }
func (nilTools) SearchTools(context.Context, json.RawMessage) (string, []retrieval.Match, error) {
	return "", nil, nil
}
func (nilTools) Get(string) (tool.Tool, bool) { return tool.Tool{}, false }
func (nilTools) Call(context.Context, string, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, tool.ErrUnknown
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
				agenttest.Reply{ToolCalls: []tool.ToolCall{{ID: "ts_1", Search: true, Arguments: `{"query":"convert money between currencies"}`}}},
				agenttest.Reply{ToolCalls: []tool.ToolCall{{ID: "fc_2", Name: "t__convert_currency", Arguments: `{"amount":10,"from":"EUR","to":"CHF"}`}}},
				agenttest.Reply{Content: "10 EUR are about 9.4 CHF.", Usage: &agenttest.Usage{PromptTokens: 900, CachedPromptTokens: 768, CompletionTokens: 9}},
			)
			defer srv.Close()
			var ev events
			a, err := agent.New(newResponses(t, srv.URL, openaimodel.ResponsesOptions{Stream: stream}), f.TS,
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
		agenttest.Reply{Hosted: []tool.HostedCall{{Server: "weather", Name: "get_weather", Arguments: `{"city":"Bern"}`, Output: "sunny, 21 °C"}},
			Content: "Sunny, 21 °C."},
		agenttest.Reply{Content: "Still sunny."},
	)
	defer srv.Close()
	m := newResponses(t, srv.URL, openaimodel.ResponsesOptions{NoDefer: true, Hosted: []openaimodel.HostedMCP{{
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
		if o.Name != think.SearchToolName {
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
