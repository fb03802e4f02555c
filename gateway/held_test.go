package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
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

// TestHeldCalls: an upstream of 2025-11-25 asks for input with requests of
// its own while a call is in flight; a client of 2026-07-28 cannot be sent
// requests, so it gets them as input-required results naming the held
// call, and its retries answer them: the go-sdk client's own rounds, and
// rounds by hand (a state answered once, or unknown, is refused).
func TestHeldCalls(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "greet", Description: "Ask the user's name, then their town, and greet them.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var got []string
			for _, q := range []string{"name", "town"} {
				res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Your " + q + "?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"` + q + `":{"type":"string"}}}`)})
				if err != nil {
					return nil, err
				}
				s, _ := res.Content[q].(string)
				got = append(got, s)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + strings.Join(got, " of ")}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	cfg := &config.Config{Servers: map[string]config.Server{"asker": {URL: hs.URL, Type: "http"}}} // 2025-11-25
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"asker__*"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	answers := map[string]string{"Your name?": "Ada", "Your town?": "Turin"}
	connect := func(opts *mcp.ClientOptions) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		return cs
	}
	elicit := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		q := strings.TrimSuffix(strings.TrimPrefix(req.Params.Message, "Your "), "?")
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{q: answers[req.Params.Message]}}, nil
	}
	text := func(res *mcp.CallToolResult) string {
		if res == nil || len(res.Content) != 1 {
			return ""
		}
		tc, _ := res.Content[0].(*mcp.TextContent)
		if tc == nil {
			return ""
		}
		return tc.Text
	}
	ctx := context.Background()

	t.Run("the SDK's rounds", func(t *testing.T) {
		cs := connect(&mcp.ClientOptions{ElicitationHandler: elicit})
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__greet", Arguments: map[string]any{}})
		if err != nil || text(res) != "hello Ada of Turin" {
			t.Fatalf("call = %q, %v; want hello Ada of Turin", text(res), err)
		}
	})
	t.Run("by hand", func(t *testing.T) {
		cs := connect(&mcp.ClientOptions{ElicitationHandler: elicit, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
		params := &mcp.CallToolParams{Name: "asker__greet", Arguments: map[string]any{}}
		var states []string
		for round := 0; ; round++ {
			res, err := cs.CallTool(ctx, params)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if !res.NeedsInput() {
				if got := text(res); got != "hello Ada of Turin" || round != 2 {
					t.Fatalf("after %d rounds: %q, want hello Ada of Turin after 2", round, got)
				}
				break
			}
			if len(res.InputRequests) != 1 || !strings.HasPrefix(res.RequestState, "toolsift-held:") {
				t.Fatalf("round %d: inputRequests %v, requestState %q; want one question and a held call's state", round, res.InputRequests, res.RequestState)
			}
			responses := mcp.InputResponseMap{}
			for id, in := range res.InputRequests {
				p, ok := in.(*mcp.ElicitParams)
				if !ok {
					t.Fatalf("round %d: input request %T, want an elicitation", round, in)
				}
				r, _ := elicit(ctx, &mcp.ElicitRequest{Params: p})
				responses[id] = r
			}
			states = append(states, res.RequestState)
			params = &mcp.CallToolParams{Name: "asker__greet", Arguments: map[string]any{}, RequestState: res.RequestState, InputResponses: responses}
		}
		for _, state := range append(states[:1], "toolsift-held:nope") {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker__greet", Arguments: map[string]any{}, RequestState: state,
				InputResponses: mcp.InputResponseMap{"toolsift-1": &mcp.ElicitResult{Action: "accept"}}})
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, "no call of asker__greet waits for it") {
				t.Errorf("retry with the state %q: %v, want invalid params: no call waits for it", state, err)
			}
		}
	})
}
