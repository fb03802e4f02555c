package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/store"
)

// askingUpstream is a go-sdk server of MCP 2026-07-28 (stateless HTTP)
// whose tool "ask" needs the caller's name: it answers with an
// input-required result (an elicitation under the id "user_name", a
// requestState) until the retry carries the answer and that state; "needs"
// refuses a caller whose client did not declare elicitation, with -32021.
func askingUpstream(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", Description: "Ask the user for their name and greet them.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ans, ok := req.Params.InputResponses["user_name"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{RequestState: "state-1", InputRequests: mcp.InputRequestMap{"user_name": &mcp.ElicitParams{
					Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}}, nil
			}
			if req.Params.RequestState != "state-1" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState does not verify"}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + ans.Content["name"].(string)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "needs", Description: "A tool that needs elicitation.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs elicitation",
					Data: json.RawMessage(`{"requiredCapabilities":{"elicitation":{}}}`)}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestRoundTrips: behind one toolsift serve URL, an upstream of 2026-07-28
// asks for input during a call. A client of 2026-07-28 gets the
// input-required result under the upstream's ids and state, and its retry
// completes the call (the upstream, not the gateway, keeps the state); its
// own capabilities travel upstream, and the upstream's -32021 reaches it as
// a JSON-RPC error. A client of 2025-11-25 on the same URL is asked with an
// elicitation request, as before.
func TestRoundTrips(t *testing.T) {
	up := askingUpstream(t)
	cfg := &config.Config{Servers: map[string]config.Server{"asker": {URL: up, Type: "http", ProtocolVersion: "2026-07-28"}}}
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"asker__*"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	elicited := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}
	connect := func(version string, opts *mcp.ClientOptions) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("Connect(%q): %v", version, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	text := func(res *mcp.CallToolResult) string {
		if len(res.Content) != 1 {
			return ""
		}
		tc, _ := res.Content[0].(*mcp.TextContent)
		if tc == nil {
			return ""
		}
		return tc.Text
	}
	ctx := context.Background()

	t.Run("2026-07-28 rounds by hand", func(t *testing.T) {
		cs := connect("", &mcp.ClientOptions{ElicitationHandler: elicited, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__ask", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		ask, ok := res.InputRequests["user_name"].(*mcp.ElicitParams)
		if !res.NeedsInput() || !ok || ask.Message != "Your name?" || res.RequestState != "state-1" || len(res.Content) != 0 {
			t.Fatalf("first round: NeedsInput %v, inputRequests %v, requestState %q, content %v; want the upstream's elicitation under user_name and its state",
				res.NeedsInput(), res.InputRequests, res.RequestState, res.Content)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__ask", Arguments: map[string]any{}, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bo"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != "hello Bo" || res.NeedsInput() {
			t.Fatalf("retry = %q (NeedsInput %v), want hello Bo", got, res.NeedsInput())
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__ask", Arguments: map[string]any{}, RequestState: "forged",
			InputResponses: mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Eve"}}}})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || !strings.Contains(rpc.Message, "requestState does not verify") {
			t.Fatalf("forged state: %v, want the upstream's JSON-RPC error", err)
		}
	})
	t.Run("2026-07-28 by the SDK's rounds", func(t *testing.T) {
		cs := connect("", &mcp.ClientOptions{ElicitationHandler: elicited})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__ask", Arguments: map[string]any{}})
		if err != nil || text(res) != "hello Ada" {
			t.Fatalf("call = %v, %v; want hello Ada", res, err)
		}
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__needs", Arguments: map[string]any{}}); err != nil || text(res) != "ok" {
			t.Fatalf("needs, with elicitation declared = %v, %v; want ok", res, err)
		}
	})
	t.Run("2026-07-28 without elicitation", func(t *testing.T) {
		cs := connect("", nil)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__needs", Arguments: map[string]any{}})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Fatalf("needs = %v, want the upstream's -32021 (the client's capabilities went upstream, not toolsift's)", err)
		}
	})
	t.Run("2025-11-25", func(t *testing.T) {
		cs := connect("2025-11-25", &mcp.ClientOptions{ElicitationHandler: elicited})
		if cs.ID() == "" {
			t.Fatal("no session id: want the side with sessions")
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__ask", Arguments: map[string]any{}})
		if err != nil || text(res) != "hello Ada" {
			t.Fatalf("call = %v, %v; want hello Ada (asked through an elicitation request)", res, err)
		}
	})
}

// TestCallByNameResultType: a found tool called by name by a client of
// 2026-07-28 (answered by a middleware, not the SDK's tool handler) gets a
// result marked "resultType":"complete", which that revision requires and
// the TypeScript SDK v2 refuses a result without.
func TestCallByNameResultType(t *testing.T) {
	gw, err := gateway.Open(context.Background(), localTools(t), &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()
	for _, tc := range []struct{ name, args, want string }{
		{"math__add", `{"a":40,"b":2}`, `42`},                                // by name: not on the fixed list
		{"call_tool", `{"name":"math__add","arguments":{"a":1,"b":2}}`, `3`}, // the SDK's tool handler
	} {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tc.name + `","arguments":` + tc.args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tc.name)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"resultType":"complete"`) || !strings.Contains(string(b), `"text":"`+tc.want+`"`) {
			t.Errorf("%s: %s %s, want the result %s marked complete", tc.name, resp.Status, b, tc.want)
		}
	}
}
