package gateway_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
)

// TestCompletionReachesTheUpstream: completion/complete for a namespaced
// prompt goes to the upstream server that offers it, under the prompt's own
// name, and the answer comes back (it was -32601).
func TestCompletionReachesTheUpstream(t *testing.T) {
	upstream := sdk.NewServer(&sdk.Implementation{Name: "names", Version: "1"}, &sdk.ServerOptions{
		CompletionHandler: func(_ context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{
				Values: []string{req.Params.Ref.Name + ":" + req.Params.Argument.Value + "a"}}}, nil
		},
	})
	upstream.AddTool(&sdk.Tool{Name: "t", Description: "A tool.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	upstream.AddPrompt(&sdk.Prompt{Name: "greet", Arguments: []*sdk.PromptArgument{{Name: "who"}}},
		func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{}, nil
		})
	ts := openToolset(t, &config.Config{Servers: map[string]config.Server{"names": dialed(upstream)}})
	p, err := gateway.NewProxy(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "2025-11-25")
	if caps := c.InitializeResult().Capabilities; caps.Completions == nil {
		t.Errorf("capabilities %+v declare no completions", caps)
	}
	res, err := c.Complete(context.Background(), &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/prompt", Name: "names__greet"},
		Argument: sdk.CompleteParamsArgument{Name: "who", Value: "Ad"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"greet:Ada"}, res.Completion.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}
