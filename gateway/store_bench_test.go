package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/upstream"
)

// BenchmarkGatewayStore: what the store costs a team gateway per search_tools
// and per call_tool, with API tokens and the audit log on and the Hub's
// tool lists and trust records in the same store: in memory, in a folder,
// and in PostgreSQL (a throwaway cluster on a unix socket, fsync off, as
// the tests run it). A search reads no store row (its index is in memory;
// a token read is cached for TokenCacheTTL); a call writes its audit
// record before it returns.
func BenchmarkGatewayStore(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"memory", "dir", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			var st store.Store
			switch kind {
			case "memory":
				st = store.NewMemory()
			case "dir":
				st = newDir(b, b.TempDir())
			case "postgres":
				pg, err := postgres.Open(ctx, pgtest.Start(b), nil)
				if err != nil {
					b.Fatal(err)
				}
				st = pg
			}
			defer st.Close()
			ts, hub := openHubToolset(b, localTools(b), upstream.HubOptions{Store: st}, toolsift.Options{NoSemantic: true})
			p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Audit: &audit.Log{Store: st}})
			if err != nil {
				b.Fatal(err)
			}
			tokens := authn.NewTokens(st)
			secret, _, err := tokens.Create(ctx, "alice", []string{"eng"}, "")
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(authn.Require(tokens, nil)(p.Handler(nil)))
			defer srv.Close()
			hc := &http.Client{Transport: bearer{secret, http.DefaultTransport}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
				&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			for _, op := range []struct {
				name   string
				params *mcp.CallToolParams
			}{
				{"search", &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "add two numbers"}}},
				{"call", &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}}},
			} {
				b.Run(op.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if res, err := cs.CallTool(ctx, op.params); err != nil || res.IsError {
							b.Fatal(err, res)
						}
					}
				})
			}
		})
	}
}
