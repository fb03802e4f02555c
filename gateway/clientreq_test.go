//lint:file-ignore SA1019 sampling is deprecated by MCP 2026-07-28, but clients of the earlier revisions use it and the proxy passes it on.

package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/upstream"
)

// TestSamplingReachesTheCallingClient: an upstream server's sampling
// request made during a call goes to the client whose call it is; a client
// that did not declare sampling has it declined, with the reason.
func TestSamplingReachesTheCallingClient(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "ask", Description: "Ask the client's model.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello"}}},
			})
			if err != nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "declined: " + err.Error()}}, IsError: true}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model said: " + res.Content.(*mcp.TextContent).Text}}}, nil
		})
	cfg := &config.Config{Servers: map[string]config.Server{"asker": dialed(up)}}
	ts, hub := openHubToolset(t, cfg, upstream.HubOptions{ClientRequests: gateway.NewClientRequests(nil, 0)}, toolsift.Options{NoSemantic: true})
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}

	// A client with sampling.
	st, ct := mcp.NewInMemoryTransports()
	if _, err := p.NewServer().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	withSampling := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi from the sampler"}}, nil
		},
	})
	cs, err := withSampling.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c := &client{ClientSession: cs}
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "asker__ask"}); isErr || text != "model said: hi from the sampler" {
		t.Errorf("with sampling: %q (isError %v)", text, isErr)
	}

	// A client without: declined, saying why.
	plain := connect(t, p.NewServer(), "2025-11-25")
	text, isErr := plain.call(t, "call_tool", map[string]any{"name": "asker__ask"})
	if !isErr || !strings.Contains(text, `did not declare "sampling"`) {
		t.Errorf("without sampling: %q (isError %v), want it declined", text, isErr)
	}
}

// TestSamplingRateLimited: a hostile upstream that sends 300 sampling
// requests in one call gets the first 5 (the limit a minute) through to
// the client and the rest refused with a JSON-RPC error naming the limit;
// another server's requests are not touched by it.
func TestSamplingRateLimited(t *testing.T) {
	asker := func(n int) config.Server {
		up := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
		up.AddTool(&mcp.Tool{Name: "ask", Description: "Ask the client's model, many times.", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ok, refused, last := 0, 0, ""
				for range n {
					_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
						Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "again"}}}})
					if err != nil {
						refused++
						last = err.Error()
						continue
					}
					ok++
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("ok=%d refused=%d last=%s", ok, refused, last)}}}, nil
			})
		return dialed(up)
	}
	cfg := &config.Config{Servers: map[string]config.Server{"evil": asker(300), "good": asker(3)}}
	ts, hub := openHubToolset(t, cfg, upstream.HubOptions{ClientRequests: gateway.NewClientRequests(nil, 5)}, toolsift.Options{NoSemantic: true})
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := p.NewServer().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	var sampled atomic.Int32
	cl := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "hi"}}, nil
		},
	})
	cs, err := cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c := &client{ClientSession: cs}
	text, _ := c.call(t, "call_tool", map[string]any{"name": "evil__ask"})
	if !strings.HasPrefix(text, "ok=5 refused=295 ") || !strings.Contains(text, "over the limit of 5 sampling and elicitation requests a minute") {
		t.Errorf("evil's 300 requests: %q, want 5 through and 295 refused naming the limit", text)
	}
	if n := sampled.Load(); n != 5 {
		t.Errorf("the client was asked %d times, want 5", n)
	}
	if text, _ := c.call(t, "call_tool", map[string]any{"name": "good__ask"}); !strings.HasPrefix(text, "ok=3 refused=0") {
		t.Errorf("another server's requests: %q, want all 3 through", text)
	}
}
