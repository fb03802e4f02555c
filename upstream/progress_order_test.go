package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestHubCallProgressBeforeResult: a server that sends its progress notices
// and its result at once (as the conformance suite's everything-server
// does) gets every notice to the WithProgress callback before Call
// returns, over a Dial stream and over streamable HTTP. The SDK hands a
// result to its caller at once and notifications to a goroutine of their
// own; a slow callback let the result overtake the last notices, which a
// proxy then dropped (17 of 20 runs of the suite's tools-call-with-progress
// through toolsift serve lost the last one).
func TestHubCallProgressBeforeResult(t *testing.T) {
	checkGoroutines(t)
	const notices = 3
	newSrv := func() *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				token := req.Params.GetProgressToken()
				for i := 1; token != nil && i <= notices; i++ {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: notices, Message: fmt.Sprintf("step %d", i),
					}); err != nil {
						return nil, err
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
		return srv
	}
	httpSrv := newSrv()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return httpSrv }, nil))
	t.Cleanup(ts.Close)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{
		"dial": memServer(newSrv()),
		"http": {Type: "http", URL: ts.URL},
	}}, nil, nil)

	for _, server := range []string{"dial", "http"} {
		t.Run(server, func(t *testing.T) {
			for call := range 20 {
				var mu sync.Mutex
				got := 0
				ctx := upstream.WithProgress(context.Background(), func(upstream.CallProgress) {
					// A client that takes a moment to take each notice,
					// as a proxy writing to its own client does.
					time.Sleep(2 * time.Millisecond)
					mu.Lock()
					got++
					mu.Unlock()
				})
				res, err := hub.Call(ctx, server+"__work", nil)
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				n := got
				mu.Unlock()
				if res.Content != "done" || n != notices {
					t.Fatalf("call %d: %q with %d progress notices before it returned, want done after %d", call, res.Content, n, notices)
				}
			}
		})
	}
}
