package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/mcp"
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
	newSrv := func() *sdk.Server {
		srv := sdk.NewServer(&sdk.Implementation{Name: "p", Version: "1"}, nil)
		srv.AddTool(&sdk.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				token := req.Params.GetProgressToken()
				for i := 1; token != nil && i <= notices; i++ {
					if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: notices, Message: fmt.Sprintf("step %d", i),
					}); err != nil {
						return nil, err
					}
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
			})
		return srv
	}
	httpSrv := newSrv()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return httpSrv }, nil))
	t.Cleanup(ts.Close)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{
		"dial": memServer(newSrv()),
		"http": {Type: "http", URL: ts.URL},
	}}, nil)

	for _, server := range []string{"dial", "http"} {
		t.Run(server, func(t *testing.T) {
			for call := range 20 {
				var mu sync.Mutex
				got := 0
				ctx := mcp.WithProgress(context.Background(), func(mcp.CallProgress) {
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
