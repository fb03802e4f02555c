package oauth_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// TestLoginOnly2026: a server of MCP 2026-07-28 only refuses an initialize
// (no protocol header) with 400 before it asks for a token. The Hub on the
// latest revision reports the login it needs (its server/discover got the
// 401), Login asks with server/discover and reads the challenge (one 401
// more), and after the login the Hub lists and calls.
func TestLoginOnly2026(t *testing.T) {
	srv := oauthtest.New(notesServer2026(), &oauthtest.Options{Only2026: true})
	defer srv.Close()
	s := newStore(t, t.TempDir())
	connect2026 := func() (*upstream.Hub, upstream.ServerStatus) {
		cfg := &config.Config{Servers: map[string]config.Server{"notes": {URL: srv.URL, Type: "http", ProtocolVersion: "latest"}}}
		h, err := upstream.NewHub(cfg, &upstream.HubOptions{Auth: s, Store: store.NewMemory(), MaxRestarts: -1, Timeout: testenv.WaitLimit()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		h.Connect(t.Context(), nil)
		return h, h.Status()[0]
	}

	_, st := connect2026()
	wantLoginError(t, st.Err, false, "needs a login: not logged in")

	before := srv.Counts().Unauthorized
	g := login(t, s, srv.URL)
	if n := srv.Counts().Unauthorized - before; n != 1 {
		t.Errorf("Login got %d answers 401 from the server, want 1: its server/discover probe (its initialize probe gets 400)", n)
	}
	if !slices.Contains(g.Scopes, "mcp:tools") {
		t.Errorf("granted %v, want the challenge's mcp:tools", g.Scopes)
	}

	hub, st := connect2026()
	if st.State != upstream.StateReady || st.Tools != 2 || st.ProtocolVersion != "2026-07-28" {
		t.Fatalf("after login: %+v", st)
	}
	res, err := hub.Call(t.Context(), "notes__read_notes", []byte(`{"text":"hi"}`))
	if err != nil || res.Content != "notes: hi" {
		t.Fatalf("call: %+v, %v", res, err)
	}
}

// notesServer2026 is notesServer's read_notes served as the go-sdk serves
// MCP 2026-07-28: stateless streamable HTTP.
func notesServer2026() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	for _, name := range []string{"read_notes", "write_note"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Notes: " + name + "."},
			func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes: " + a.Text}}}, nil, nil
			})
	}
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
}
