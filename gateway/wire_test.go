package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
)

// TestBothWires: one Handler URL serves at once a go-sdk client of MCP
// 2026-07-28 (no session: server/discover, a fixed list, found tools
// called by name or through call_tool) and one pinned to 2025-11-25 (a
// session whose list the found tools join, with list_changed).
func TestBothWires(t *testing.T) {
	gw, err := gateway.Open(context.Background(), localTools(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(authn.Require(authn.SharedToken("tok"), nil)(gw.Handler()))
	t.Cleanup(srv.Close) // after the sessions' Cleanup: LIFO
	hc := srv.Client()
	hc.Transport = bearer{"tok", hc.Transport}
	open := func(version string) *client {
		c := &client{changed: make(chan struct{}, 16)}
		cl := mcp.NewClient(&mcp.Implementation{Name: "test-" + version, Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case c.changed <- struct{}{}:
				default:
				}
			},
		})
		cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("Connect(%q): %v", version, err)
		}
		t.Cleanup(func() { cs.Close() })
		c.ClientSession = cs
		return c
	}
	latest, old := open(""), open("2025-11-25") // "": the SDK's latest
	if got := latest.InitializeResult().ProtocolVersion; got != "2026-07-28" {
		t.Fatalf("latest client: protocol version %s, want 2026-07-28", got)
	}
	if got := old.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Fatalf("pinned client: protocol version %s, want 2025-11-25", got)
	}
	if latest.ID() != "" || old.ID() == "" {
		t.Errorf("session ids: latest %q (want none), 2025-11-25 %q (want one)", latest.ID(), old.ID())
	}
	t.Run("together", func(t *testing.T) {
		t.Run("2026-07-28", func(t *testing.T) {
			t.Parallel()
			c := latest
			ans := c.search(t, "add two numbers", 1)
			if len(ans.Tools) != 1 || ans.Tools[0].Name != "math__add" || ans.Listed {
				t.Fatalf("search_tools = %+v", ans)
			}
			if text, isErr := c.call(t, "math__add", map[string]any{"a": 40, "b": 2}); isErr || text != "42" {
				t.Errorf("math__add by name = %q (isError %v)", text, isErr)
			}
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}); isErr || text != "3" {
				t.Errorf("call_tool(math__add) = %q (isError %v)", text, isErr)
			}
			if got := c.names(t); slices.Contains(got, "math__add") || !slices.Contains(got, "search_tools") {
				t.Errorf("tools/list = %v, want the fixed list", got)
			}
			if _, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope__nothing"}); err == nil || !strings.Contains(err.Error(), "search_tools finds tools") {
				t.Errorf("call of an unknown tool: %v, want the SDK's unknown tool with the hint", err)
			}
		})
		t.Run("2025-11-25", func(t *testing.T) {
			t.Parallel()
			c := old
			ans := c.search(t, "add two numbers", 1)
			if len(ans.Tools) != 1 || ans.Tools[0].Name != "math__add" || !ans.Listed {
				t.Fatalf("search_tools = %+v", ans)
			}
			c.waitChanged(t)
			if got := c.names(t); !slices.Contains(got, "math__add") {
				t.Errorf("tools/list = %v, want math__add listed", got)
			}
			if text, isErr := c.call(t, "math__add", map[string]any{"a": 40, "b": 2}); isErr || text != "42" {
				t.Errorf("math__add = %q (isError %v)", text, isErr)
			}
		})
	})
}

// TestWireByMeta: a POST without Mcp-Protocol-Version whose _meta names
// 2026-07-28 goes to the stateless side, which says the header is missing
// (the side with sessions would say the version is unsupported).
func TestWireByMeta(t *testing.T) {
	gw, err := gateway.Open(context.Background(), localTools(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`,
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "header is required") || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %s %s, want the stateless side's missing header", body, resp.Status, b)
		}
	}
}
