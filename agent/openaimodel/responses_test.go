package openaimodel_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
)

func newResponses(t *testing.T, url string, o openaimodel.ResponsesOptions) *openaimodel.Responses {
	t.Helper()
	o.Options = provider.Options{BaseURL: url, APIKey: "test-key", MaxRetries: -1}
	m, err := openaimodel.NewResponses("test-model", &o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// deltas reassembles what OnDelta received: the text and each tool call.
type deltas struct {
	text  strings.Builder
	calls []tool.ToolCall
	n     int
}

func (d *deltas) add(x agent.Delta) {
	d.n++
	if !x.Tool {
		d.text.WriteString(x.Text)
		return
	}
	for len(d.calls) <= x.Index {
		d.calls = append(d.calls, tool.ToolCall{})
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
		{Content: "Hello, wörld!", Usage: &agenttest.Usage{PromptTokens: 100, CachedPromptTokens: 64, CompletionTokens: 5}},
		{Content: "Let me look.", ToolCalls: []tool.ToolCall{
			{ID: "c1", Name: "t__get_weather", Arguments: `{"city":"Bern"}`},
			{ID: "c2", Name: "t__get_forecast", Arguments: `{"city":"Zürich","days":2}`},
		}, ChunkSize: 1},
		{ToolCalls: []tool.ToolCall{{ID: "s1", Search: true, Arguments: `{"query":"currency"}`}}},
	}
	want := []agent.Response{
		{Message: tool.Message{Role: tool.RoleAssistant, Content: "Hello, wörld!"}, FinishReason: "stop",
			Usage: agent.Usage{PromptTokens: 100, CachedPromptTokens: 64, CompletionTokens: 5, TotalTokens: 105}, Model: "test-model"},
		{Message: tool.Message{Role: tool.RoleAssistant, Content: "Let me look.", ToolCalls: []tool.ToolCall{
			{ID: "c1", Name: "t__get_weather", Arguments: `{"city":"Bern"}`},
			{ID: "c2", Name: "t__get_forecast", Arguments: `{"city":"Zürich","days":2}`},
		}}, FinishReason: "tool_calls", Model: "test-model"},
		{Message: tool.Message{Role: tool.RoleAssistant, ToolCalls: []tool.ToolCall{
			{ID: "s1", Name: think.SearchToolName, Search: true, Arguments: `{"query":"currency"}`},
		}}, FinishReason: "tool_calls", Model: "test-model"},
	}
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			srv := agenttest.NewResponsesServer(replies...)
			defer srv.Close()
			m := newResponses(t, srv.URL, openaimodel.ResponsesOptions{Stream: stream})
			for i, w := range want {
				var d deltas
				got, err := m.Complete(context.Background(), agent.Request{
					Messages: []tool.Message{{Role: tool.RoleSystem, Content: "sys"}, {Role: tool.RoleUser, Content: "hi"}},
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
	_, err := newResponses(t, srv.URL, openaimodel.ResponsesOptions{}).Complete(context.Background(), agent.Request{
		Messages: []tool.Message{{Role: tool.RoleUser, Content: "hi"}}})
	var apiErr *openai.Error
	if !errors.Is(err, agent.ErrModel) || !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("err = %v, want ErrModel wrapping a 429 *openai.Error", err)
	}
	for _, o := range []openaimodel.ResponsesOptions{
		{Hosted: []openaimodel.HostedMCP{{Server: "x"}}},
		{Hosted: []openaimodel.HostedMCP{{URL: "https://x.example/mcp"}}},
		{Hosted: []openaimodel.HostedMCP{{Server: "x", URL: "https://x.example/mcp"}, {Server: "y", Label: "x", URL: "https://y.example/mcp"}}},
	} {
		o.Options = provider.Options{BaseURL: srv.URL, APIKey: "k"}
		if _, err := openaimodel.NewResponses("m", &o); !errors.Is(err, openaimodel.ErrOptions) {
			t.Errorf("NewResponses(%+v) = %v, want ErrOptions", o.Hosted, err)
		}
	}
}
