package anthropicmodel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolsift/toolsift/agent"
	"github.com/toolsift/toolsift/agent/anthropicmodel"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/tool"
)

// hostileSSE is a Messages API server written for issue 35's tests: it
// answers every request with the given server-sent events, as they are.
func hostileSSE(t *testing.T, events ...string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			typ := ev[strings.Index(ev, `"type":"`)+8:]
			typ = typ[:strings.IndexByte(typ, '"')]
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, ev)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// toolUseEvents is a streamed reply with one tool_use block whose input
// arrives in the given pieces.
func toolUseEvents(pieces ...string) []string {
	evs := []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"delete_repo","input":{}}}`,
	}
	for _, p := range pieces {
		evs = append(evs, fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%q}}`, p))
	}
	return append(evs,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`,
		`{"type":"message_stop"}`)
}

// TestStreamKeepsMalformedToolInput: a streamed tool_use whose input is
// not JSON reaches the agent as it was sent, which refuses it and tells the
// model (as with Chat and Responses), instead of becoming {} and running
// the tool with no arguments (issue 35 item 9).
func TestStreamKeepsMalformedToolInput(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pieces []string
		want   string
	}{
		{"cut off", []string{`{"repo": "acme/prod`, `uction", "force": tr`}, `{"repo": "acme/production", "force": tr`},
		{"not an object's JSON", []string{`{repo: 1}`}, `{repo: 1}`},
		{"valid", []string{`{"repo":`, ` "acme/x"}`}, `{"repo": "acme/x"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := hostileSSE(t, toolUseEvents(tt.pieces...)...)
			m := newModel(t, srv.URL, anthropicmodel.Options{Stream: true})
			resp, err := m.Complete(context.Background(), agent.Request{
				Messages: []tool.Message{{Role: tool.RoleUser, Content: "go"}},
				Tools:    []agent.ToolDef{{Name: "delete_repo"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Arguments != tt.want {
				t.Fatalf("tool calls %+v, want one with arguments %s", resp.Message.ToolCalls, tt.want)
			}
		})
	}
}

// TestRepliesBounded: a Messages reply that never ends (one JSON body, one
// event, a stream of events) fails past MaxReplyBytes, and a stream that
// stalls fails after ReplyIdleTimeout, each error naming its option, the
// conversation's calls not run (issue 35 item 3). The server and the
// client are net/http's, over an in-memory connection in a synctest
// bubble: the stall's timeout passes on its fake clock, exactly.
func TestRepliesBounded(t *testing.T) {
	const limit = 1 << 20
	chunk := strings.Repeat("a", 64<<10)
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`
	block := `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	for _, tt := range []struct {
		name   string
		stream bool
		reply  func(w http.ResponseWriter, r *http.Request, write func(string) bool)
		o      anthropicmodel.Options
		after  time.Duration // when the error comes, on the fake clock
		want   string
	}{
		{"huge JSON body", false, func(w http.ResponseWriter, _ *http.Request, write func(string) bool) {
			w.Header().Set("Content-Type", "application/json")
			write(`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`)
			for write(chunk) {
			}
		}, anthropicmodel.Options{MaxReplyBytes: limit}, 0, fmt.Sprintf("body over %d bytes (anthropicmodel.Options.MaxReplyBytes", limit)},
		{"one huge event", true, func(w http.ResponseWriter, _ *http.Request, write func(string) bool) {
			w.Header().Set("Content-Type", "text/event-stream")
			write("event: message_start\ndata: " + start + "\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"")
			for write(chunk) {
			}
		}, anthropicmodel.Options{MaxReplyBytes: limit}, 0, fmt.Sprintf("body over %d bytes (anthropicmodel.Options.MaxReplyBytes", limit)},
		{"endless stream", true, func(w http.ResponseWriter, _ *http.Request, write func(string) bool) {
			w.Header().Set("Content-Type", "text/event-stream")
			write("event: message_start\ndata: " + start + "\n\nevent: content_block_start\ndata: " + block + "\n\n")
			ev := "event: content_block_delta\ndata: " + fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, strings.Repeat("b", 4000)) + "\n\n"
			for write(ev) {
			}
		}, anthropicmodel.Options{MaxReplyBytes: limit}, 0, fmt.Sprintf("body over %d bytes (anthropicmodel.Options.MaxReplyBytes", limit)},
		{"stall", true, func(w http.ResponseWriter, r *http.Request, write func(string) bool) {
			w.Header().Set("Content-Type", "text/event-stream")
			write("event: message_start\ndata: " + start + "\n\n")
			<-r.Context().Done() // nothing more, until the client hangs up
		}, anthropicmodel.Options{ReplyIdleTimeout: 300 * time.Millisecond}, 300 * time.Millisecond, "no bytes for 300ms in the middle of a reply (anthropicmodel.Options.ReplyIdleTimeout)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var written atomic.Int64
				o := tt.o
				o.Stream = tt.stream
				o.HTTPClient = testenv.PipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					tt.reply(w, r, func(s string) bool {
						n, err := w.Write([]byte(s))
						written.Add(int64(n))
						w.(http.Flusher).Flush()
						return err == nil && r.Context().Err() == nil
					})
				}))
				m := newModel(t, "http://model.test", o)
				begin := time.Now()
				_, err := m.Complete(context.Background(), agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "go"}}})
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "model reply refused") {
					t.Fatalf("error %v, want it to say %q", err, tt.want)
				}
				if took := time.Since(begin); took != tt.after {
					t.Errorf("failed after %v, want %v", took, tt.after)
				}
				if w := written.Load(); w > 8*limit {
					t.Errorf("the server wrote %d bytes before the client stopped reading", w)
				}
			})
		})
	}
}

// TestStreamBlockIndex: a delta for a content block that never started
// fails the request, naming the block; a thinking block's deltas are not
// part of the reply, and the text after it is.
func TestStreamBlockIndex(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`
	end := []string{
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`,
		`{"type":"message_stop"}`,
	}
	req := agent.Request{Messages: []tool.Message{{Role: tool.RoleUser, Content: "go"}}}

	srv := hostileSSE(t, append([]string{start,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"stray"}}`,
	}, end...)...)
	_, err := newModel(t, srv.URL, anthropicmodel.Options{Stream: true}).Complete(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "text_delta for content block 2, of 1") {
		t.Errorf("a delta for block 2 of 1: error %v", err)
	}

	srv = hostileSSE(t, append([]string{start,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see."}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"It is "}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"42."}}`,
		`{"type":"content_block_stop","index":1}`,
	}, end...)...)
	resp, err := newModel(t, srv.URL, anthropicmodel.Options{Stream: true}).Complete(context.Background(), req)
	if err != nil || resp.Message.Content != "It is 42." || resp.FinishReason != "stop" {
		t.Errorf("thinking, then text: %+v, %v; want the text %q", resp, err, "It is 42.")
	}
}
