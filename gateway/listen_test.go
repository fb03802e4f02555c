package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// TestListenListChanges: a client of 2026-07-28 has no session, and hears
// of list changes on its subscriptions/listen stream (SEP-2575): when an
// upstream's prompts change, and when a pinned tool joins the fixed list.
func TestListenListChanges(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	up.AddPrompt(&mcp.Prompt{Name: "first"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	up.AddTool(&mcp.Tool{Name: "old", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	_, url := pinned2026(t, up)

	prompts, tools := make(chan struct{}, 8), make(chan struct{}, 8)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { prompts <- struct{}{} },
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { tools <- struct{}{} },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	caps := cs.InitializeResult().Capabilities
	if caps.Tools == nil || !caps.Tools.ListChanged || caps.Prompts == nil || !caps.Prompts.ListChanged {
		t.Fatalf("server/discover capabilities %+v, want tools and prompts listChanged", caps)
	}
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(testenv.WaitLimit()):
			t.Fatalf("no %s list_changed on the listen stream", what)
		}
	}

	up.AddPrompt(&mcp.Prompt{Name: "second"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	wait(prompts, "prompts")
	up.AddTool(&mcp.Tool{Name: "new", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	wait(tools, "tools")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "up__new") {
		t.Fatalf("tools/list after the change = %v, want the pinned up__new", names)
	}
}

// TestListenToolsSaid: an upstream that says its tools changed
// (notifications/tools/list_changed) while its list is the same (it
// registered a tool again, as the conformance suite's
// test_trigger_tool_change does after its first call) is heard by a
// client of 2026-07-28 listening for tool list changes, since the fixed
// list holds that upstream's pinned tools; a session of 2025-11-25, whose
// own list did not change, hears nothing.
func TestListenToolsSaid(t *testing.T) {
	testenv.CheckGoroutines(t)
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	same := &mcp.Tool{Name: "same", Description: "Stays as it is.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	up.AddTool(same, handler)
	gw, url := pinned2026(t, up)

	tools := make(chan struct{}, 8)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { tools <- struct{}{} },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	old := connect(t, gw.NewServer(), "2025-11-25")
	if _, err := old.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	before, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}

	up.AddTool(same, handler) // the same tool again: the upstream announces a change
	select {
	case <-tools:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("no tools list_changed on the listen stream after the upstream said its tools changed")
	}
	after, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(before.Tools)
	a, _ := json.Marshal(after.Tools)
	if diff := cmp.Diff(string(b), string(a)); diff != "" {
		t.Errorf("the fixed list changed (-before +after):\n%s", diff)
	}
	// The 2025-11-25 session's stream is ordered: an announcement sent
	// with the one above would arrive before this answer.
	if _, err := old.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.changed:
		t.Error("the 2025-11-25 session heard tools list_changed, but its list did not change")
	default:
	}
}

// TestListenAfterIdle: the stateless server, whose sessions are requests,
// is not forgotten while no request is in flight (as a session's server
// without a session is after sessionGrace): a client of 2026-07-28 that
// starts listening after a quiet spell hears the next change.
func TestListenAfterIdle(t *testing.T) {
	testenv.CheckGoroutines(t)
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	up.AddTool(&mcp.Tool{Name: "old", InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
	gw, url := pinned2026(t, up)
	// A quiet spell longer than the grace, then a server made for
	// another session, which forgets the servers past it.
	gw.SetSessionGrace(time.Nanosecond)
	time.Sleep(time.Millisecond)
	gw.NewServer()

	tools := make(chan struct{}, 8)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { tools <- struct{}{} },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	up.AddTool(&mcp.Tool{Name: "new", InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
	select {
	case <-tools:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("no tools list_changed on the listen stream after the stateless server's quiet spell")
	}
}

// pinned2026 serves up as "up", a stateless upstream of MCP 2026-07-28,
// behind a gateway that pins every tool of it, and returns the gateway and
// its URL; both are closed when the test ends.
func pinned2026(t *testing.T, up *mcp.Server) (*gateway.Gateway, string) {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	cfg := &config.Config{Servers: map[string]config.Server{"up": {URL: hs.URL, Type: "http", ProtocolVersion: "2026-07-28"}}}
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"up__*"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	return gw, srv.URL
}
