package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// TestPolicyQuietsAnnouncements (issue 33): on the server of 2026-07-28
// shared by every caller, a tool list change of math (a pinned tool
// joins; math says its tools changed while its list stays the same) is
// announced on alice's listen stream (team a sees math) and not on bob's
// (team b sees text only); a change of text reaches bob, and not alice.
// go-sdk clients, listening.
func TestPolicyQuietsAnnouncements(t *testing.T) {
	handler := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{}, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	ups := map[string]*sdk.Server{}
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for _, name := range []string{"math", "text"} {
		up := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
		up.AddTool(&sdk.Tool{Name: "first", Description: "The first.", InputSchema: schema}, handler)
		hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, &sdk.StreamableHTTPOptions{Stateless: true}))
		t.Cleanup(hs.Close)
		ups[name] = up
		cfg.Servers[name] = config.Server{URL: hs.URL, Type: "http", ProtocolVersion: "2026-07-28"}
	}
	pol, err := config.ParsePolicy("policy.json", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"*"}}, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)

	alice := connectAs(t, srv.URL, "alice:a", "2026-07-28")
	bob := connectAs(t, srv.URL, "bob:b", "2026-07-28")
	for _, c := range []*client{alice, bob} {
		if v := c.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
	}
	hears := func(c *client, who, what string) {
		t.Helper()
		select {
		case <-c.changed:
		case <-time.After(testenv.WaitLimit()):
			t.Fatalf("%s heard no tools list_changed after %s", who, what)
		}
	}
	// Not heard: the announcement to the other stream is sent in the
	// same pass as the one heard, so a grace after it is ample.
	deaf := func(c *client, who, what string) {
		t.Helper()
		select {
		case <-c.changed:
			t.Errorf("%s heard tools list_changed after %s, out of its scope", who, what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	drain := func(c *client) {
		for {
			select {
			case <-c.changed:
			case <-time.After(300 * time.Millisecond):
				return
			}
		}
	}

	// The listen streams are open once a change reaches them: wait until
	// each hears a change of its own server first.
	ups["math"].AddTool(&sdk.Tool{Name: "second", Description: "The second.", InputSchema: schema}, handler)
	hears(alice, "alice", "math's tool joined")
	ups["text"].AddTool(&sdk.Tool{Name: "second", Description: "The second.", InputSchema: schema}, handler)
	hears(bob, "bob", "text's tool joined")
	drain(alice)
	drain(bob)

	ups["math"].AddTool(&sdk.Tool{Name: "third", Description: "The third.", InputSchema: schema}, handler)
	hears(alice, "alice", "math's third tool joined")
	deaf(bob, "bob", "math's third tool joined")
	ups["math"].AddTool(&sdk.Tool{Name: "third", Description: "The third.", InputSchema: schema}, handler) // said, same list
	hears(alice, "alice", "math said its tools changed")
	deaf(bob, "bob", "math said its tools changed")
	ups["text"].AddTool(&sdk.Tool{Name: "third", Description: "The third.", InputSchema: schema}, handler)
	hears(bob, "bob", "text's third tool joined")
	deaf(alice, "alice", "text's third tool joined")
}
