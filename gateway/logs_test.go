//lint:file-ignore SA1019 logging is deprecated by MCP 2026-07-28 (SEP-2577), but servers and clients of the earlier revisions use it, and the Hub and proxy pass it on.

package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// TestLogsReachTheCallingClient: the log messages an upstream server sends
// during a call reach the client that made it, at the level that client
// asked for, and not a client that asked for none.
func TestLogsReachTheCallingClient(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "logger", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}},
	})
	up.AddTool(&mcp.Tool{Name: "work", Description: "Works and logs.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for _, l := range []mcp.LoggingLevel{"debug", "info", "warning"} {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "work", Data: fmt.Sprintf("a %s line", l)})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	cfg := &config.Config{Servers: map[string]config.Server{"logger": dialed(up)}}
	ts, hub := openHubToolset(t, cfg, upstream.HubOptions{ServerLogLevel: gateway.ServerLogLevel}, toolsift.Options{NoSemantic: true})
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}

	got := make(chan string, 16)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := p.NewServer().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	listening := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			got <- fmt.Sprintf("%s %s %v", req.Params.Level, req.Params.Logger, req.Params.Data)
		},
	})
	cs, err := listening.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	c := &client{ClientSession: cs}
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "logger__work"}); isErr || text != "done" {
		t.Fatalf("call: %q (isError %v)", text, isErr)
	}
	var lines []string
	for range 2 {
		select {
		case l := <-got:
			lines = append(lines, l)
		case <-time.After(testenv.WaitLimit()):
			t.Fatalf("log messages the client got: %q, want 2", lines)
		}
	}
	if diff := cmp.Diff([]string{"info work a info line", "warning work a warning line"}, lines); diff != "" {
		t.Errorf("log messages the client got (-want +got):\n%s", diff)
	}

	// A client that set no level gets none (the SDK's rule), and the call
	// still works.
	plain := connect(t, p.NewServer(), "2025-11-25")
	if text, isErr := plain.call(t, "call_tool", map[string]any{"name": "logger__work"}); isErr || text != "done" {
		t.Errorf("call without a level: %q (isError %v)", text, isErr)
	}
}
