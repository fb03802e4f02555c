package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// BenchmarkListFoundTools: a search lists the tools it found on its
// session without the SDK's AddTool, which decodes each tool's input
// schema twice with a fresh 32 KiB buffer (about 330 KB for five tools,
// most of what a search allocated): listing five new tools costs one
// announcement of the list's change (the SDK decodes search_tools' small
// schema for it). The figure is in docs/measurements.md (issue 34, third
// round): `go test -run '^$' -bench ListFoundTools -benchmem ./gateway/`.
func BenchmarkListFoundTools(b *testing.B) {
	var tools []upstream.LocalTool
	for i := range 80 {
		tools = append(tools, upstream.LocalTool{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("Tool %d.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"the a"},"b":{"type":"integer"}},"required":["a"]}`),
			Handler:     func(context.Context, json.RawMessage) (string, error) { return "ok", nil }})
	}
	ts, s := oneSession(b, tools)
	all := ts.Tools()
	batch := func(i int) []tool.Tool { return all[(5*i)%len(all):][:5] } // 16 batches of 5: each list adds 5 tools
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if added, _ := s.list(batch(i)); len(added) != 5 {
			b.Fatalf("round %d: listed %v, want 5 new tools", i, added)
		}
	}
}

// The found tools, which the SDK server does not know, come on the first
// page of a tools/list answer only: a later page (a list of pinned tools
// longer than the SDK's page) must not list them again.
func TestFoundToolsOnFirstPageOnly(t *testing.T) {
	var tools []upstream.LocalTool
	for _, n := range []string{"alpha", "beta"} {
		tools = append(tools, upstream.LocalTool{Name: n, Description: "Tool " + n + ".",
			Handler: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }})
	}
	ts, s := oneSession(t, tools)
	if added, _ := s.list(ts.Tools()); len(added) != 2 {
		t.Fatalf("listed %v, want the 2 tools", added)
	}
	// What the SDK server answers for its registered tools, on any page.
	page := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "pinned"}}}, nil
	}
	names := func(cursor string) []string {
		res, err := s.foundTools(page)(context.Background(), "tools/list", &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.(*mcp.ListToolsResult).Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(""); !slices.Equal(got, []string{"pinned", "s__alpha", "s__beta"}) {
		t.Errorf("first page = %v, want the 2 found tools and pinned, in name order", got)
	}
	if got := names("next"); !slices.Equal(got, []string{"pinned"}) {
		t.Errorf("a later page = %v, want only the page's own tool (pinned)", got)
	}
}

// oneSession opens a Toolset over one local server "s" of tools, and a
// proxy with one session on it.
func oneSession(t testing.TB, tools []upstream.LocalTool) (*toolsift.Toolset, *session) {
	t.Helper()
	srv, err := upstream.LocalServer(tools...)
	if err != nil {
		t.Fatal(err)
	}
	ts, hub := openHub(t, &config.Config{Servers: map[string]config.Server{"s": srv}})
	p, err := newProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.server(false, &authn.Identity{})
	var s *session
	p.mu.Lock()
	for x := range p.sessions {
		s = x
	}
	p.mu.Unlock()
	return ts, s
}
