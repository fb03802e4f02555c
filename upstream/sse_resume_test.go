package upstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
)

// TestHTTPServerClosingItsStreams is an upstream that ends its SSE streams
// as 2025-11-25 allows (SSE polling, SEP-1699) and as load balancers with
// idle timeouts do: each call's stream is closed before its result (the
// result is fetched by resuming with Last-Event-ID) and the standalone GET
// stream is cut every 2 s. The Hub must resume rather than tear the session
// down: every call succeeds and the server's tools never leave the catalog.
func TestHTTPServerClosingItsStreams(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "polling", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "slow", Description: "Answers after closing its stream.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Extra == nil || req.Extra.CloseSSEStream == nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no SSE stream to close"}}}, nil
			}
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 50 * time.Millisecond})
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			defer cancel()
			r = r.WithContext(ctx)
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	ch := make(changes, 16)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"polling": {Type: "http", URL: ts.URL}}},
		nil, ch.onChange)
	if got := summarize(ch.next(t)); len(got.Added) != 1 {
		t.Fatalf("first change = %+v, want the tool added", got)
	}

	// Long enough for three cuts of the GET stream.
	until := time.Now().Add(7 * time.Second)
	calls := 0
	for time.Now().Before(until) {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
		res, err := hub.Call(ctx, "polling__slow", json.RawMessage(`{}`))
		cancel()
		calls++
		if err != nil {
			t.Fatalf("call %d: %v", calls, err)
		}
		if res.Content != "done" || res.IsError {
			t.Fatalf("call %d = %+v, want done", calls, res)
		}
		select {
		case c := <-ch:
			t.Fatalf("after call %d the catalog changed: %+v (status %+v)", calls, summarize(c), statusOf(t, hub, "polling"))
		default:
		}
	}
	if st := statusOf(t, hub, "polling"); st.Restarts != 0 {
		t.Errorf("status = %+v, want no restarts", st)
	}
}
