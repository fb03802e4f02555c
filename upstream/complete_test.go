package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// completingServer offers a prompt "greet" and a resource template, and
// completes their arguments with "<server>:<ref>:<argument>=<value>" and the
// context it got.
func completingServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			ref := req.Params.Ref.Name + req.Params.Ref.URI
			v := name + ":" + ref + ":" + req.Params.Argument.Name + "=" + req.Params.Argument.Value
			if req.Params.Context != nil {
				v += " after " + req.Params.Context.Arguments["first"]
			}
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{v}, Total: 1}}, nil
		},
	})
	addTextTool(srv, "t", "A tool.", "ok")
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "item", URITemplate: name + "://items/{id}"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	return srv
}

// TestHubComplete: completion/complete goes to the server that offers the
// prompt (by qualified name, sent under its own) or the resource template,
// with the argument and context, and its result comes back as it was.
func TestHubComplete(t *testing.T) {
	checkGoroutines(t)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{
		"a": memServer(completingServer("a")), "b": memServer(completingServer("b")),
	}}, nil, nil)
	for _, tc := range []struct {
		name string
		c    upstream.Completion
		want string
	}{
		{"prompt a", upstream.Completion{Prompt: "a__greet", Argument: "who", Value: "Ad"}, "a:greet:who=Ad"},
		{"prompt b", upstream.Completion{Prompt: "b__greet", Argument: "who", Value: "Gr"}, "b:greet:who=Gr"},
		{"template b", upstream.Completion{ResourceURI: "b://items/{id}", Argument: "id", Value: "4", Context: map[string]string{"first": "x"}}, "b:b://items/{id}:id=4 after x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := hub.Passthrough().Complete(context.Background(), tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var res mcp.CompleteResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.want}, res.Completion.Values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
	for _, c := range []upstream.Completion{{Prompt: "greet", Argument: "who"}, {ResourceURI: "c://x/{id}", Argument: "id"}, {Prompt: "a__greet", ResourceURI: "a://items/{id}"}} {
		if _, err := hub.Passthrough().Complete(context.Background(), c); !errors.Is(err, upstream.ErrUnknownCompletion) {
			t.Errorf("Complete(%+v): %v, want ErrUnknownCompletion", c, err)
		}
	}
}
