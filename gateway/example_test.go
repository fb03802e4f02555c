package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// A Go program mounts the gateway on its own mux, beside its other routes,
// and an MCP client searches the tools of every server behind it.
func Example() {
	ctx := context.Background()
	// The upstream servers: here one in this process; a config file's
	// servers (config.Load) are served the same way.
	notes, err := upstream.LocalServer(
		upstream.LocalTool{Name: "create_note", Description: "Create a note with a title and a body.",
			Handler: func(context.Context, json.RawMessage) (string, error) { return "created", nil }},
		upstream.LocalTool{Name: "get_forecast", Description: "Get the weather forecast for a city.",
			Handler: func(context.Context, json.RawMessage) (string, error) { return "sunny", nil }},
	)
	if err != nil {
		log.Fatal(err)
	}
	cfg := &config.Config{Servers: map[string]config.Server{"notes": notes}}
	gw, err := gateway.Open(ctx, cfg, &gateway.Options{
		Toolset: toolsift.Options{Store: store.NewMemory()},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer gw.Close()

	// Behind a bearer token: authn.Require in front of the handler (per-user
	// API tokens, OIDC or a Verifier of your own work the same way).
	mux := http.NewServeMux()
	mux.Handle("/mcp", authn.Require(authn.SharedToken("s3cret"), nil)(gw.Handler()))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		log.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println("healthz:", string(health))

	// Any MCP client: here the go-sdk's, with the bearer token.
	client := &http.Client{Transport: withToken{"s3cret", http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: think.SearchToolName,
		Arguments: map[string]any{"query": "write down a note", "k": 1}})
	if err != nil {
		log.Fatal(err)
	}
	var found struct{ Tools []struct{ Name string } }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &found); err != nil {
		log.Fatal(err)
	}
	for _, t := range found.Tools {
		fmt.Println("found:", t.Name)
	}
	// Output:
	// healthz: ok
	// found: notes__create_note
}

// withToken adds the bearer token to each request.
type withToken struct {
	token string
	next  http.RoundTripper
}

func (t withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}
