//lint:file-ignore SA1019 logging is deprecated by MCP 2026-07-28 (SEP-2577), but servers and clients of the earlier revisions use it, and the Hub and proxy pass it on.

package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// loggingServer has a tool "work" that sends three log messages and
// returns at once (as the conformance suite's test_tool_with_logging).
func loggingServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "l", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}},
	})
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 1; i <= 3; i++ {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "work", Data: fmt.Sprintf("step %d", i)}); err != nil {
					return nil, err
				}
			}
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: map[string]any{"detail": true, "n": 12345678901234567, "x": 1.5e-7, "s": "é\u2028<"}})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	return srv
}

// TestHubCallLogs: with ServerLogLevel the Hub asks servers that declare
// logging for their log messages, and WithLog hands those a server sends
// during a call to that call, every one before it returns (over a Dial
// stream and streamable HTTP, a slow callback included), at the level
// asked for.
func TestHubCallLogs(t *testing.T) {
	checkGoroutines(t)
	httpSrv := loggingServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return httpSrv }, nil))
	t.Cleanup(ts.Close)
	servers := map[string]config.Server{"dial": memServer(loggingServer()), "http": {Type: "http", URL: ts.URL}}

	want := []upstream.LogMessage{
		{Level: "info", Logger: "work", Data: json.RawMessage(`"step 1"`)},
		{Level: "info", Logger: "work", Data: json.RawMessage(`"step 2"`)},
		{Level: "info", Logger: "work", Data: json.RawMessage(`"step 3"`)},
	}
	for _, tc := range []struct {
		level string
		want  []upstream.LogMessage
	}{
		{"info", want},
		{"debug", append(want, upstream.LogMessage{Level: "debug", Data: json.RawMessage(`{"detail":true,"n":12345678901234567,"s":"é\u2028<","x":1.5e-7}`)})},
		{"", nil}, // servers that are not asked send nothing
	} {
		hub := startHub(t, &config.Config{Servers: servers}, &upstream.HubOptions{ServerLogLevel: tc.level}, nil)
		for _, server := range []string{"dial", "http"} {
			t.Run(server+"/"+tc.level, func(t *testing.T) {
				for call := range 10 {
					var mu sync.Mutex
					var got []upstream.LogMessage
					ctx := upstream.WithLog(context.Background(), func(m upstream.LogMessage) {
						time.Sleep(2 * time.Millisecond) // a client that takes a moment
						mu.Lock()
						got = append(got, m)
						mu.Unlock()
					})
					if _, err := hub.Call(ctx, server+"__work", nil); err != nil {
						t.Fatal(err)
					}
					mu.Lock()
					diff := cmp.Diff(tc.want, got)
					mu.Unlock()
					if diff != "" {
						t.Fatalf("call %d: log messages before it returned (-want +got):\n%s", call, diff)
					}
				}
			})
		}
	}
}

func TestHubServerLogLevelInvalid(t *testing.T) {
	_, err := upstream.NewHub(&config.Config{}, &upstream.HubOptions{ServerLogLevel: "loud"})
	if !errors.Is(err, upstream.ErrOptions) {
		t.Errorf("NewHub with ServerLogLevel loud: %v, want ErrOptions", err)
	}
}
