//lint:file-ignore SA1019 sampling is deprecated by MCP 2026-07-28, but clients of the earlier revisions use it and the proxy passes it on.

package proxy_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/proxy"
	"github.com/toolsift/toolsift/mcp"
)

// TestSamplingReachesTheCallingClient: an upstream server's sampling
// request made during a call goes to the client whose call it is; a client
// that did not declare sampling has it declined, with the reason.
func TestSamplingReachesTheCallingClient(t *testing.T) {
	upstream := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	upstream.AddTool(&sdk.Tool{Name: "ask", Description: "Ask the client's model.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello"}}},
			})
			if err != nil {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "declined: " + err.Error()}}, IsError: true}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "model said: " + res.Content.(*sdk.TextContent).Text}}}, nil
		})
	cfg := &config.Config{Servers: map[string]config.Server{"asker": {Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		serverSide, clientSide := net.Pipe()
		if _, err := upstream.Connect(ctx, &sdk.IOTransport{Reader: serverSide, Writer: serverSide}, nil); err != nil {
			clientSide.Close()
			return nil, err
		}
		return clientSide, nil
	}}}}
	ts, err := toolsift.OpenConfig(context.Background(), cfg, &toolsift.Options{NoSemantic: true, NoCache: true,
		Hub: mcp.HubOptions{ClientRequests: proxy.NewClientRequests(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	p, err := proxy.New(ts, nil)
	if err != nil {
		t.Fatal(err)
	}

	// A client with sampling.
	st, ct := sdk.NewInMemoryTransports()
	if _, err := p.NewServer().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	withSampling := sdk.NewClient(&sdk.Implementation{Name: "sampler", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "hi from the sampler"}}, nil
		},
	})
	cs, err := withSampling.Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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
