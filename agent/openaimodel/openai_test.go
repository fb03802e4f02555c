package openaimodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openai/openai-go/v3"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/openaimodel"
	"github.com/toolsift/toolsift/internal/agenttest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/provider"
	"github.com/toolsift/toolsift/tool"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

func newOpenAI(t *testing.T, url string, stream bool) *openaimodel.Chat {
	t.Helper()
	m, err := openaimodel.NewChat("test-model", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: url, APIKey: "test-key", MaxRetries: -1}, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOpenAIComplete runs the same scripted replies through the JSON and the
// streaming paths, with argument deltas split at every size from 1 byte, one
// call after the other and interleaved.
func TestOpenAIComplete(t *testing.T) {
	parallel := []tool.ToolCall{
		{ID: "call_a", Name: "weather__get_forecast", Arguments: `{"city":"Zürich","days":3,"units":{"temp":"C"}}`},
		{ID: "call_b", Name: "calendar__list_events", Arguments: `{"from":"2026-11-22","to":"2026-11-25","tags":["work","\"quoted\""]}`},
		{ID: "call_c", Name: "noargs", Arguments: ``},
	}
	tests := []struct {
		name  string
		reply agenttest.Reply
		want  tool.Message
	}{
		{"text", agenttest.Reply{Content: "Hello, wörld — ✓"},
			tool.Message{Role: tool.RoleAssistant, Content: "Hello, wörld — ✓"}},
		{"one call", agenttest.Reply{ToolCalls: parallel[:1]},
			tool.Message{Role: tool.RoleAssistant, ToolCalls: parallel[:1]}},
		{"parallel calls with text", agenttest.Reply{Content: "Let me look.", ToolCalls: parallel},
			tool.Message{Role: tool.RoleAssistant, Content: "Let me look.", ToolCalls: parallel}},
		{"invalid JSON arguments kept verbatim", agenttest.Reply{ToolCalls: []tool.ToolCall{{ID: "x", Name: "f", Arguments: `{"a":`}}},
			tool.Message{Role: tool.RoleAssistant, ToolCalls: []tool.ToolCall{{ID: "x", Name: "f", Arguments: `{"a":`}}}},
	}
	type variant struct {
		stream     bool
		chunk      int
		interleave bool
	}
	variants := []variant{{stream: false}}
	for _, chunk := range []int{1, 2, 3, 7, 1000} {
		variants = append(variants, variant{true, chunk, false}, variant{true, chunk, true})
	}
	for _, tt := range tests {
		for _, v := range variants {
			name := fmt.Sprintf("%s/json", tt.name)
			if v.stream {
				name = fmt.Sprintf("%s/stream/chunk=%d/interleave=%v", tt.name, v.chunk, v.interleave)
			}
			t.Run(name, func(t *testing.T) {
				reply := tt.reply
				reply.ChunkSize, reply.Interleave = v.chunk, v.interleave
				reply.Usage = &agenttest.Usage{PromptTokens: 42, CompletionTokens: 7}
				srv := agenttest.NewServer(reply)
				defer srv.Close()
				var d deltas
				resp, err := newOpenAI(t, srv.URL, v.stream).Complete(context.Background(), agent.Request{
					Messages: []tool.Message{{Role: tool.RoleUser, Content: "hi"}},
					OnDelta:  d.add,
				})
				if err != nil {
					t.Fatal(err)
				}
				// Streamed, the deltas add up to the reply; not streamed,
				// there are none.
				wantDeltas := &deltas{}
				if v.stream {
					wantDeltas.text.WriteString(tt.want.Content)
					wantDeltas.calls = tt.want.ToolCalls
				}
				if d.text.String() != wantDeltas.text.String() {
					t.Errorf("streamed text %q, want %q", d.text.String(), wantDeltas.text.String())
				}
				if diff := cmp.Diff(wantDeltas.calls, d.calls, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("streamed calls (-want +got):\n%s", diff)
				}
				if v.stream && v.chunk == 1 && len(tt.want.Content) > 1 && d.n < 2 {
					t.Errorf("%d deltas for %d bytes of text in 1-byte chunks", d.n, len(tt.want.Content))
				}
				if diff := cmp.Diff(tt.want, resp.Message, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(agent.Usage{PromptTokens: 42, CompletionTokens: 7, TotalTokens: 49}, resp.Usage); diff != "" {
					t.Errorf("usage (-want +got):\n%s", diff)
				}
				wantFinish := "stop"
				if len(tt.want.ToolCalls) > 0 {
					wantFinish = "tool_calls"
				}
				if resp.FinishReason != wantFinish || resp.Model != "test-model" {
					t.Errorf("finish %q model %q, want %q test-model", resp.FinishReason, resp.Model, wantFinish)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Stream != v.stream {
					t.Fatalf("requests: %+v, want 1 with stream=%v", reqs, v.stream)
				}
			})
		}
	}
}

// TestOpenAIRequest checks what goes on the wire: every role, tool calls
// and their answers, and the tools with their schemas, in order.
func TestOpenAIRequest(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := agenttest.NewServer(agenttest.Reply{Content: "ok"})
			defer srv.Close()
			msgs := []tool.Message{
				{Role: tool.RoleSystem, Content: "be brief"},
				{Role: tool.RoleUser, Content: "weather?"},
				{Role: tool.RoleAssistant, ToolCalls: []tool.ToolCall{{ID: "c1", Name: "w__get", Arguments: `{"city":"Bern"}`}, {ID: "c2", Name: "w__alerts", Arguments: `{}`}}},
				{Role: tool.RoleTool, ToolCallID: "c1", Content: "sunny"},
				{Role: tool.RoleTool, ToolCallID: "c2", Content: "none"},
				{Role: tool.RoleAssistant, Content: "Sunny."},
				{Role: tool.RoleUser, Content: "thanks"},
			}
			tools := []agent.ToolDef{
				{Name: "w__get", Description: "Get the weather.", Parameters: json.RawMessage(`{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}`)},
				{Name: "w__alerts"},
			}
			if _, err := newOpenAI(t, srv.URL, stream).Complete(context.Background(), agent.Request{Messages: msgs, Tools: tools}); err != nil {
				t.Fatal(err)
			}
			got := srv.Requests()[0]
			if diff := cmp.Diff(msgs, got.Messages, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			wantTools := []agenttest.ToolDef{
				{Name: tools[0].Name, Description: tools[0].Description, Parameters: tools[0].Parameters},
				{Name: "w__alerts", Parameters: json.RawMessage(`{"properties":{},"type":"object"}`)},
			}
			if diff := cmp.Diff(wantTools, got.Tools, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if got.Model != "test-model" {
				t.Errorf("model %q", got.Model)
			}
			if stream && !strings.Contains(string(got.Body), `"include_usage":true`) {
				t.Errorf("streaming request without include_usage: %s", got.Body)
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

// TestOpenAIStreamQuirks feeds raw SSE streams the way some compatible
// servers write them.
func TestOpenAIStreamQuirks(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	tests := []struct {
		name   string
		events []string
		want   []tool.ToolCall
	}{
		{
			name: "parallel calls sharing index 0 with distinct ids",
			events: []string{
				chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}`),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}`),
				chunk(`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}`),
			},
			want: []tool.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{}`}},
		},
		{
			name: "index -1, id repeated in every delta, no usage",
			events: []string{
				chunk(`{"role":"assistant","tool_calls":[{"index":-1,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}`),
				chunk(`{"tool_calls":[{"index":-1,"id":"a","function":{"arguments":"{\"q\":\"a b"}}]}`),
				chunk(`{"tool_calls":[{"index":-1,"id":"a","function":{"arguments":"\"}"}}]}`),
			},
			want: []tool.ToolCall{{ID: "a", Name: "f", Arguments: `{"q":"a b"}`}},
		},
		{
			name: "two calls in one delta, missing ids",
			events: []string{
				chunk(`{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}},{"index":1,"function":{"name":"g","arguments":"{\"a\""}}]}`),
				chunk(`{"tool_calls":[{"index":1,"function":{"arguments":":[1,2]}"}}]}`),
			},
			want: []tool.ToolCall{{ID: "call_0", Name: "f", Arguments: `{}`}, {ID: "call_1", Name: "g", Arguments: `{"a":[1,2]}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for _, e := range tt.events {
					fmt.Fprintf(w, "data: %s\n\n", e)
				}
				fmt.Fprint(w, "data: [DONE]\n\n")
			}))
			defer srv.Close()
			resp, err := newOpenAI(t, srv.URL, true).Complete(context.Background(), agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "x"}}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Message.ToolCalls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := agenttest.NewServer(agenttest.Reply{Status: http.StatusBadRequest, Content: "tools too long"})
			defer srv.Close()
			_, err := newOpenAI(t, srv.URL, stream).Complete(context.Background(), agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "x"}}})
			if !errors.Is(err, agent.ErrModel) {
				t.Fatalf("err = %v, want ErrModel", err)
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
				t.Fatalf("err = %v, want an *openai.Error with status 400", err)
			}
		})
	}
	t.Run("stream without a choice", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		defer srv.Close()
		_, err := newOpenAI(t, srv.URL, true).Complete(context.Background(), agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "x"}}})
		if !errors.Is(err, agent.ErrModel) || !strings.Contains(err.Error(), "without a choice") {
			t.Fatalf("err = %v, want ErrModel: stream ended without a choice", err)
		}
	})
	t.Run("bad config is an options error at New", func(t *testing.T) {
		for _, tt := range []struct {
			model string
			opts  *openaimodel.ChatOptions
		}{
			{"", nil},
			{"m", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: "localhost:11434"}}},
			{"m", &openaimodel.ChatOptions{Options: provider.Options{BaseURL: "https://api.openai.com/v1"}}},
		} {
			t.Setenv("OPENAI_API_KEY", "")
			if _, err := openaimodel.NewChat(tt.model, tt.opts); !errors.Is(err, openaimodel.ErrOptions) {
				t.Errorf("NewChat(%q, %+v) = %v, want ErrOptions", tt.model, tt.opts, err)
			}
		}
	})
	t.Run("cancelled while the server hangs", func(t *testing.T) {
		for _, stream := range []bool{false, true} {
			asked := make(chan struct{})
			var once sync.Once
			srv := agenttest.NewServerFunc(func(agenttest.Request) agenttest.Reply {
				once.Do(func() { close(asked) })
				return agenttest.Reply{Hang: true}
			})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-asked // the request is at the server
				cancel()
			}()
			_, err := newOpenAI(t, srv.URL, stream).Complete(ctx, agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "x"}}})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("stream=%v: err = %v, want context.Canceled", stream, err)
			}
			srv.Close()
		}
	})
}
