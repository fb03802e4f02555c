package anthropicmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/anthropicmodel"
	"github.com/toolsift/toolsift/internal/anthropictest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/tool"
)

// waitLimit bounds every wait in these tests: a hang guard that scales with
// the test binary's -timeout, not a timing assertion (testenv.WaitLimit).
var waitLimit = testenv.WaitLimit

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// tokenizer is shared by the tests (testenv.Tokenizer).
var tokenizer = testenv.Tokenizer

func newModel(t testing.TB, url string, o anthropicmodel.Options) *anthropicmodel.Model {
	t.Helper()
	o.BaseURL, o.APIKey, o.MaxRetries = url, "test-key", -1
	m, err := anthropicmodel.New("claude-test", &o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// conversation has a system prompt, a user task, an assistant turn with two
// parallel calls and their results.
var conversation = []tool.Message{
	{Role: tool.RoleSystem, Content: "You are terse."},
	{Role: tool.RoleUser, Content: "Add 2 and 3, then echo héllo."},
	{Role: tool.RoleAssistant, Content: "Working on it.", ToolCalls: []tool.ToolCall{
		{ID: "toolu_a", Name: "add", Arguments: `{"a":2,"b":3}`},
		{ID: "toolu_b", Name: "echo", Arguments: `{"text":"héllo"}`},
	}},
	{Role: tool.RoleTool, ToolCallID: "toolu_a", Content: "5"},
	{Role: tool.RoleTool, ToolCallID: "toolu_b", Content: "héllo"},
}

var tools = []agent.ToolDef{
	{Name: "add", Description: "Add two numbers.", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"additionalProperties":false}`)},
	{Name: "echo", Description: "Echo a text.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	{Name: "noargs"},
}

// TestComplete sends a conversation with parallel calls, JSON and SSE, and
// reads the reply back: what the server decoded is the conversation, the
// tools keep their schemas, the reply's calls and usage come back, and a
// stream hands every piece to OnDelta.
func TestComplete(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			srv := anthropictest.NewServer(anthropictest.Reply{
				Content: "Calling them again.",
				ToolCalls: []tool.ToolCall{
					{ID: "toolu_1", Name: "add", Arguments: `{"a":10,"b":32}`},
					{ID: "toolu_2", Name: "echo", Arguments: `{"text":"wörld"}`},
				},
				Usage: &anthropictest.Usage{PromptTokens: 100, CachedPromptTokens: 60, CacheWriteTokens: 30, CompletionTokens: 7},
			})
			defer srv.Close()
			m := newModel(t, srv.URL, anthropicmodel.Options{Stream: stream})
			var text strings.Builder
			args := map[int]*strings.Builder{}
			ids := map[int]string{}
			resp, err := m.Complete(context.Background(), agent.Request{
				Messages: conversation,
				Tools:    tools,
				OnDelta: func(d agent.Delta) {
					if !d.Tool {
						text.WriteString(d.Text)
						return
					}
					if args[d.Index] == nil {
						args[d.Index] = &strings.Builder{}
						ids[d.Index] = d.ID + " " + d.Name
					}
					args[d.Index].WriteString(d.Arguments)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			want := agent.Response{
				Message: tool.Message{Role: tool.RoleAssistant, Content: "Calling them again.", ToolCalls: []tool.ToolCall{
					{ID: "toolu_1", Name: "add", Arguments: `{"a":10,"b":32}`},
					{ID: "toolu_2", Name: "echo", Arguments: `{"text":"wörld"}`},
				}},
				FinishReason: "tool_calls",
				Usage:        agent.Usage{PromptTokens: 100, CachedPromptTokens: 60, CacheWriteTokens: 30, CompletionTokens: 7, TotalTokens: 107},
				Model:        "claude-test",
			}
			if diff := cmp.Diff(want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if stream {
				got := map[string]string{"text": text.String()}
				for i, b := range args {
					got[ids[i]] = b.String()
				}
				wantDeltas := map[string]string{"text": "Calling them again.", "toolu_1 add": `{"a":10,"b":32}`, "toolu_2 echo": `{"text":"wörld"}`}
				if diff := cmp.Diff(wantDeltas, got); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
			}

			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Stream != stream {
				t.Errorf("stream = %v", r.Stream)
			}
			if diff := cmp.Diff([]string{"You are terse."}, r.System); diff != "" {
				t.Errorf("system (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(conversation[1:], r.Messages); diff != "" {
				t.Errorf("messages as the server read them (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"add", "echo", "noargs"}, r.ToolNames()); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			var schema map[string]any
			if err := json.Unmarshal(r.Tools[0].InputSchema, &schema); err != nil {
				t.Fatal(err)
			}
			if schema["additionalProperties"] != false || schema["type"] != "object" || len(schema["required"].([]any)) != 2 {
				t.Errorf("add's input_schema lost fields: %s", r.Tools[0].InputSchema)
			}
		})
	}
}

// TestBreakpoints: the cache markers sit on the last tool, the last system
// block, the previous request's end and this request's end, never more
// than 4; NoPromptCache sends none.
func TestBreakpoints(t *testing.T) {
	next := append(append([]tool.Message(nil), conversation...),
		tool.Message{Role: tool.RoleAssistant, ToolCalls: []tool.ToolCall{{ID: "toolu_c", Name: "add", Arguments: `{"a":5,"b":1}`}}},
		tool.Message{Role: tool.RoleTool, ToolCallID: "toolu_c", Content: "6"},
	)
	tests := []struct {
		name          string
		noPromptCache bool
		msgs          []tool.Message
		tools         []agent.ToolDef
		want          []string
	}{
		{"first step", false, conversation[:2], tools, []string{"tools[2]", "system[0]", "messages[0].content[0]"}},
		{"second step", false, conversation, tools, []string{"tools[2]", "system[0]", "messages[0].content[0]", "messages[2].content[1]"}},
		{"third step", false, next, tools, []string{"tools[2]", "system[0]", "messages[2].content[1]", "messages[4].content[0]"}},
		{"no tools, no system", false, conversation[1:], nil, []string{"messages[0].content[0]", "messages[2].content[1]"}},
		{"NoPromptCache", true, next, tools, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := anthropictest.NewServer(anthropictest.Reply{Content: "ok"})
			defer srv.Close()
			m := newModel(t, srv.URL, anthropicmodel.Options{NoPromptCache: tt.noPromptCache})
			if _, err := m.Complete(context.Background(), agent.Request{Messages: tt.msgs, Tools: tt.tools}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, srv.Requests()[0].Breakpoints); diff != "" {
				t.Errorf("breakpoints (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrors: an API error wraps agent.ErrModel and the SDK's error with
// its status; the key is in no error.
func TestErrors(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := anthropictest.NewServer(anthropictest.Reply{Status: http.StatusTooManyRequests, Content: "slow down"})
		m := newModel(t, srv.URL, anthropicmodel.Options{Stream: stream})
		_, err := m.Complete(context.Background(), agent.Request{Messages: conversation[:2]})
		srv.Close()
		if !errors.Is(err, agent.ErrModel) {
			t.Fatalf("stream=%v: %v does not wrap agent.ErrModel", stream, err)
		}
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
			t.Errorf("stream=%v: %v: no *anthropicmodel.Error with status 429", stream, err)
		}
		if !strings.Contains(err.Error(), "claude-test") || strings.Contains(err.Error(), "test-key") {
			t.Errorf("stream=%v: error %q should name the model and not the key", stream, err)
		}
	}
}

// TestStreamDefault: by default (Stream false) the model sends plain
// requests; asked to stream, a server that does not stream (it answers
// with one JSON body) fails the request with an error wrapping
// agent.ErrNoStream that names the option to turn off; a server that
// streams still streams.
func TestStreamDefault(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		serverStreams        bool
		stream, wantErr      bool
		wantStreamedRequests bool
	}{
		{"default, server does not stream", false, false, false, false},
		{"default, server streams", true, false, false, false},
		{"stream, server streams", true, true, false, true},
		{"stream, server does not stream", false, true, true, true},
	} {
		srv := anthropictest.NewServer(anthropictest.Reply{Content: "hello", NoStream: !tt.serverStreams})
		var deltas strings.Builder
		resp, err := newModel(t, srv.URL, anthropicmodel.Options{Stream: tt.stream}).Complete(context.Background(),
			agent.Request{Messages: conversation[:2], OnDelta: func(d agent.Delta) { deltas.WriteString(d.Text) }})
		srv.Close()
		if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream != tt.wantStreamedRequests {
			t.Errorf("%s: %d requests, want 1 asking to stream: %v", tt.name, len(reqs), tt.wantStreamedRequests)
		}
		if !tt.wantErr {
			if err != nil || resp.Message.Content != "hello" {
				t.Errorf("%s: %q, %v; want hello", tt.name, resp.Message.Content, err)
			}
			if want := map[bool]string{true: "hello"}[tt.stream]; deltas.String() != want {
				t.Errorf("%s: deltas %q, want %q", tt.name, deltas.String(), want)
			}
			continue
		}
		if !errors.Is(err, agent.ErrModel) || !errors.Is(err, agent.ErrNoStream) {
			t.Fatalf("%s: %v, want agent.ErrModel wrapping agent.ErrNoStream", tt.name, err)
		}
		for _, want := range []string{"application/json", "set anthropicmodel.Options.Stream to false"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", tt.name, err, want)
			}
		}
	}
}

func TestNewOptions(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	tests := []struct {
		name  string
		model string
		opts  anthropicmodel.Options
		ok    bool
	}{
		{"no model", "", anthropicmodel.Options{APIKey: "k"}, false},
		{"no key for api.anthropic.com", "m", anthropicmodel.Options{}, false},
		{"key", "m", anthropicmodel.Options{APIKey: "k"}, true},
		{"local server without key", "m", anthropicmodel.Options{BaseURL: "http://127.0.0.1:9"}, true},
		{"not http", "m", anthropicmodel.Options{BaseURL: "ftp://x", APIKey: "k"}, false},
		{"negative max tokens", "m", anthropicmodel.Options{APIKey: "k", MaxTokens: -1}, false},
		// The API refuses an unstreamed reply that may take over 10 minutes.
		{"max tokens for 10 minutes, not streamed", "m", anthropicmodel.Options{APIKey: "k", MaxTokens: 21333}, true},
		{"max tokens over 10 minutes, not streamed", "m", anthropicmodel.Options{APIKey: "k", MaxTokens: 21334}, false},
		{"max tokens over 10 minutes, streamed", "m", anthropicmodel.Options{APIKey: "k", MaxTokens: 64000, Stream: true}, true},
		{"mcp server without url", "m", anthropicmodel.Options{APIKey: "k", MCPServers: []anthropicmodel.MCPServer{{Name: "x"}}}, false},
		{"mcp server twice", "m", anthropicmodel.Options{APIKey: "k", MCPServers: []anthropicmodel.MCPServer{{Name: "x", URL: "https://x"}, {Name: "x", URL: "https://y"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropicmodel.New(tt.model, &tt.opts)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, anthropicmodel.ErrOptions)) {
				t.Errorf("New = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if _, err := anthropicmodel.New("m", &anthropicmodel.Options{BaseURL: "http://user:secret@[::1", APIKey: "k"}); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("bad URL: %v", err)
	}
}

// TestMCPConnector: a server reached by Anthropic's MCP connector gets the
// tools of this step that are its own as its enabled tools (the rest
// disabled), with the connector's beta; its tools are not sent as custom
// tools, and its token is sent but never echoed.
func TestMCPConnector(t *testing.T) {
	srv := anthropictest.NewServer(anthropictest.Reply{Content: "ok"}, anthropictest.Reply{Content: "ok"})
	defer srv.Close()
	m := newModel(t, srv.URL, anthropicmodel.Options{MCPServers: []anthropicmodel.MCPServer{
		{Name: "remote", URL: "https://mcp.example.com/mcp", AuthorizationToken: "tok-secret"},
	}})
	if m.DefersTools() {
		t.Error("a model with MCP servers defers tools; the connector's tools are chosen per step")
	}
	steps := [][]agent.ToolDef{
		{tools[0], {Name: "remote__search_issues", Description: "Search issues."}, {Name: "remote__create_issue"}},
		{tools[1]},
	}
	for _, ts := range steps {
		if _, err := m.Complete(context.Background(), agent.Request{Messages: conversation[:2], Tools: ts}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	disabled := false
	for i, want := range []struct {
		custom  []string
		enabled []string
	}{
		{[]string{"add"}, []string{"create_issue", "search_issues"}},
		{[]string{"echo"}, nil},
	} {
		r := reqs[i]
		if diff := cmp.Diff(want.custom, r.ToolNames()); diff != "" {
			t.Errorf("request %d: custom tools (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff([]anthropictest.MCPServer{{Name: "remote", URL: "https://mcp.example.com/mcp", HasToken: true}}, r.MCPServers); diff != "" {
			t.Errorf("request %d: mcp_servers (-want +got):\n%s", i, diff)
		}
		set := r.Tools[len(r.Tools)-1]
		if set.Type != "mcp_toolset" || set.MCPServerName != "remote" || set.DefaultEnabled == nil || *set.DefaultEnabled != disabled {
			t.Errorf("request %d: last tool %+v, want remote's mcp_toolset with default_config.enabled false", i, set)
		}
		if diff := cmp.Diff(want.enabled, set.EnabledTools); diff != "" {
			t.Errorf("request %d: enabled tools (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff([]string{"mcp-client-2025-11-20"}, r.Betas); diff != "" {
			t.Errorf("request %d: betas (-want +got):\n%s", i, diff)
		}
	}
}
