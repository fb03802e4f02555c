package gateway_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
)

// TestCompletionReachesTheUpstream: completion/complete for a namespaced
// prompt goes to the upstream server that offers it, under the prompt's own
// name, and the answer comes back (it was -32601).
func TestCompletionReachesTheUpstream(t *testing.T) {
	upstream := mcp.NewServer(&mcp.Implementation{Name: "names", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{req.Params.Ref.Name + ":" + req.Params.Argument.Value + "a"}}}, nil
		},
	})
	upstream.AddTool(&mcp.Tool{Name: "t", Description: "A tool.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	upstream.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	ts, hub := openToolset(t, &config.Config{Servers: map[string]config.Server{"names": dialed(upstream)}})
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "2025-11-25")
	if caps := c.InitializeResult().Capabilities; caps.Completions == nil {
		t.Errorf("capabilities %+v declare no completions", caps)
	}
	res, err := c.Complete(context.Background(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "names__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "Ad"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"greet:Ada"}, res.Completion.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}
