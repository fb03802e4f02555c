package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// roundServer is askingServer with a tool "needs" that refuses, with
// MissingRequiredClientCapabilities (-32021), a caller whose client did
// not declare elicitation, as a server of 2026-07-28 must.
func roundServer() *mcp.Server {
	srv := askingServer()
	srv.AddTool(&mcp.Tool{Name: "needs", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
				return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "needs elicitation",
					Data: json.RawMessage(`{"requiredCapabilities":{"elicitation":{}}}`)}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	return srv
}

// TestHubInputRound: a caller that makes the multi round-trip rounds
// itself (a proxy of a 2026-07-28 client) gets the server's input-required
// result as it is, and its retry reaches the server as it is; its client's
// capabilities go upstream in place of the Hub's; the server's JSON-RPC
// errors come back as *RPCError. A server of an earlier revision asks
// through ClientRequests whatever the ctx says.
func TestHubInputRound(t *testing.T) {
	answers := map[string]string{upstream.MethodElicit: `{"action":"accept","content":{"name":"Ada"}}`}
	all := upstream.ClientCapabilities{Sampling: true, Elicitation: true, Roots: true}
	elicit := json.RawMessage(`{"what":"elicitation"}`)

	t.Run("2026-07-28", func(t *testing.T) {
		checkGoroutines(t)
		a := &answerer{caps: all, answers: answers}
		hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": memServer(roundServer())}},
			&upstream.HubOptions{ClientRequests: a, ProtocolVersion: "latest"}, nil)
		if v := hub.Status()[0].ProtocolVersion; v < "2026-07-28" {
			t.Fatalf("negotiated %q, want 2026-07-28 or later", v)
		}
		ctx := context.Background()

		// First round: the input-required result, as the server wrote it.
		res, err := hub.Call(upstream.WithInputRound(ctx, upstream.InputRound{}), "asker__ask", elicit)
		if err != nil {
			t.Fatal(err)
		}
		var first struct {
			ResultType    string `json:"resultType"`
			RequestState  string `json:"requestState"`
			InputRequests map[string]struct {
				Method string `json:"method"`
			} `json:"inputRequests"`
		}
		if err := json.Unmarshal(res.Raw, &first); err != nil {
			t.Fatalf("raw result %s: %v", res.Raw, err)
		}
		if first.ResultType != "input_required" || first.RequestState != "s1" || first.InputRequests["q"].Method != upstream.MethodElicit {
			t.Fatalf("first round = %s, want resultType input_required, requestState s1, inputRequests.q an elicitation", res.Raw)
		}
		if got, _ := a.requests(); len(got) != 0 {
			t.Fatalf("ClientRequests asked %+v; the caller makes the rounds", got)
		}

		// The retry: the caller's answers and state.
		res, err = hub.Call(upstream.WithInputRound(ctx, upstream.InputRound{
			Responses: json.RawMessage(`{"q":{"action":"accept","content":{"name":"Bo"}}}`), State: "s1"}), "asker__ask", elicit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Content, `"name":"Bo"`) {
			t.Fatalf("retry result %q, want the caller's answer", res.Content)
		}

		// Without a round the Hub makes it, through ClientRequests.
		res, err = hub.Call(ctx, "asker__ask", elicit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Content, `"name":"Ada"`) {
			t.Fatalf("result %q, want ClientRequests' answer", res.Content)
		}

		// The caller's client's capabilities, not the Hub's.
		if res, err := hub.Call(ctx, "asker__needs", nil); err != nil || res.Content != "ok" {
			t.Fatalf("with the Hub's capabilities: %+v, %v; want ok", res, err)
		}
		_, err = hub.Call(upstream.WithInputRound(ctx, upstream.InputRound{Capabilities: json.RawMessage(`{"sampling":{}}`)}), "asker__needs", nil)
		var rpc *upstream.RPCError
		if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(rpc.Data), "elicitation") {
			t.Fatalf("with a client without elicitation: %v, want the server's -32021 as an *RPCError with its data", err)
		}

		// Answers that are no answers: the caller's error, named.
		_, err = hub.Call(upstream.WithInputRound(ctx, upstream.InputRound{Responses: json.RawMessage(`{"q":12345}`), State: "s1"}), "asker__ask", elicit)
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpc.Message, "inputResponses") {
			t.Fatalf("bad inputResponses: %v, want an invalid-params *RPCError naming inputResponses", err)
		}
	})

	t.Run("2025-11-25 ignores the round", func(t *testing.T) {
		checkGoroutines(t)
		a := &answerer{caps: all, answers: answers}
		hub := startHub(t, &config.Config{Servers: map[string]config.Server{"asker": memServer(roundServer())}},
			&upstream.HubOptions{ClientRequests: a}, nil)
		res, err := hub.Call(upstream.WithInputRound(context.Background(), upstream.InputRound{Capabilities: json.RawMessage(`{}`)}), "asker__ask", elicit)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Content, `"name":"Ada"`) {
			t.Fatalf("result %q, want ClientRequests' answer (the server asked with a request)", res.Content)
		}
		if got, _ := a.requests(); len(got) != 1 || got[0].Call != "asker__ask" {
			t.Fatalf("ClientRequests asked %+v, want once for asker__ask", got)
		}
	})
}
