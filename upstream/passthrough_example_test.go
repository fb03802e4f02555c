//lint:file-ignore SA1019 sampling and roots are deprecated as of MCP 2026-07-28, but servers still ask for them during the deprecation window and a proxy forwards what they ask.

package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// clientKey marks, in a call's ctx, which of the proxy's clients made it.
type clientKey struct{}

// proxyRequests forwards sampling to the client whose call caused it.
type proxyRequests struct{}

func (proxyRequests) Capabilities() upstream.ClientCapabilities {
	return upstream.ClientCapabilities{Sampling: true}
}

func (proxyRequests) HandleClientRequest(ctx context.Context, req upstream.ClientRequest) (json.RawMessage, error) {
	client, ok := ctx.Value(clientKey{}).(string)
	if !ok {
		// Not tied to a call: no client to ask.
		return nil, &upstream.RPCError{Code: -32600, Message: "no client to ask"}
	}
	// A real proxy sends req.Params to that client and returns its answer.
	fmt.Printf("%s asks %s for %s (call %s)\n", req.Server, client, req.Method, req.Call)
	return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"a haiku"},"model":"m"}`), nil
}

// A proxy answers a server's requests with the help of the client whose
// call caused them, and sees the call's progress.
func ExampleClientRequests() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "poet", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2})
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Write a haiku."}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil
		})
	cfg := &config.Config{Servers: map[string]config.Server{"poet": memServer(srv)}}
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{ClientRequests: proxyRequests{}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	ctx := context.Background()
	if err := hub.Connect(ctx, nil); err != nil {
		log.Fatal(err)
	}

	ctx = context.WithValue(ctx, clientKey{}, "client-1")
	ctx = upstream.WithProgress(ctx, func(p upstream.CallProgress) { fmt.Printf("progress %v/%v\n", p.Progress, p.Total) })
	res, err := hub.Call(ctx, "poet__write", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content)
	fmt.Println(string(res.Raw))
	// Output:
	// progress 1/2
	// poet asks client-1 for sampling/createMessage (call poet__write)
	// a haiku
	// {"content":[{"type":"text","text":"a haiku"}]}
}
