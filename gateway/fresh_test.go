package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFreshenOnList: an upstream whose tool list says it stays fresh for
// 1 ms (ttlMs), and which never says it changed, is listed again when a
// client asks for the tools: the tool it added meanwhile is on the next
// tools/list (pinned) and found by search_tools.
func TestFreshenOnList(t *testing.T) {
	var mu sync.Mutex
	names := []string{"read_notes"}
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	up.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			mu.Lock()
			defer mu.Unlock()
			res := &mcp.ListToolsResult{Cacheable: mcp.Cacheable{TTLMs: 1}}
			for _, n := range names {
				res.Tools = append(res.Tools, &mcp.Tool{Name: n, Description: "Notes: " + n, InputSchema: json.RawMessage(`{"type":"object"}`)})
			}
			return res, nil
		}
	})
	_, url := pinned2026(t, up)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	mu.Lock()
	names = append(names, "write_notes")
	mu.Unlock()
	time.Sleep(5 * time.Millisecond) // past the list's ttlMs of 1
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range res.Tools {
		got = append(got, tl.Name)
	}
	if !slices.Contains(got, "up__write_notes") {
		t.Fatalf("tools/list = %v, want up__write_notes, which the upstream added after its list's ttlMs", got)
	}
}
