package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/upstream"
)

// Multi round-trip requests (SEP-2322) of a client of MCP 2026-07-28: an
// upstream server of that revision that needs input during a call (an
// elicitation, a sampling, the roots) answers with an input-required
// result, which reaches the client as the server wrote it (its input
// requests under the server's ids, its requestState), and the client's
// retry (inputResponses, requestState) reaches the server as the client
// wrote it (upstream.WithInputRound). The upstream keeps and checks the state:
// the gateway holds nothing between rounds, so a retry may land on any
// replica. The client's own capabilities go upstream in the request's
// _meta in place of toolsift's, so that the server asks only for what that
// client can give and refuses, with its own error, a call that needs a
// capability the client lacks; such protocol errors reach the client as
// JSON-RPC errors. Clients of earlier revisions are asked through
// server→client requests, as before (clientreq.go): the Hub makes the
// rounds for them.
//
// An upstream of an earlier revision sends its input requests as requests
// of its own, while the call is in flight; to a client of 2026-07-28, which
// cannot be sent requests, they are declined (clientreq.go).

// withRound marks ctx, for a call of a client of 2026-07-28, as a call
// whose rounds the client makes (upstream.WithInputRound).
func withRound(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Params == nil || req.ProtocolVersion() < wire2026 {
		return ctx
	}
	ctx = context.WithValue(ctx, roundMark{}, true)
	return upstream.WithInputRound(ctx, round(req.Params.InputResponses, req.Params.RequestState, req.Params.Meta))
}

// withPromptRound is withRound for a prompts/get.
func withPromptRound(ctx context.Context, req *mcp.GetPromptRequest) context.Context {
	if req == nil || req.Params == nil || req.ProtocolVersion() < wire2026 {
		return ctx
	}
	ctx = context.WithValue(ctx, roundMark{}, true)
	return upstream.WithInputRound(ctx, round(req.Params.InputResponses, req.Params.RequestState, req.Params.Meta))
}

func round(responses mcp.InputResponseMap, state string, meta mcp.Meta) upstream.InputRound {
	r := upstream.InputRound{State: state}
	if responses != nil {
		r.Responses, _ = json.Marshal(responses) // re-encoding what the SDK decoded
	}
	if caps, ok := meta[mcp.MetaKeyClientCapabilities]; ok {
		r.Capabilities, _ = json.Marshal(caps)
	}
	return r
}

// roundError is the JSON-RPC error an upstream answered a call of a
// client of 2026-07-28 with (upstream.WithInputRound), nil for any other error.
func roundError(ctx context.Context, err error) error {
	var rpc *upstream.RPCError
	if err == nil || !errors.As(err, &rpc) || !isRound(ctx) {
		return nil
	}
	return &jsonrpc.Error{Code: rpc.Code, Message: text(rpc.Message), Data: rpc.Data}
}

type roundMark struct{}

// isRound reports whether ctx is that of a call of a client of 2026-07-28.
func isRound(ctx context.Context) bool {
	return ctx.Value(roundMark{}) != nil
}

// inputRequired is the input-required result raw holds (a CallToolResult
// as JSON), nil when it holds another.
func inputRequired(raw json.RawMessage) *mcp.CallToolResult {
	var probe struct {
		InputRequests json.RawMessage `json:"inputRequests"`
		ResultType    string          `json:"resultType"`
	}
	if json.Unmarshal(raw, &probe) != nil || (len(probe.InputRequests) == 0 && probe.ResultType != "input_required") {
		return nil
	}
	var res mcp.CallToolResult // its resultType, unexported, is set by its decoder
	if json.Unmarshal(raw, &res) != nil {
		return nil
	}
	return &res
}

// completed is res marked complete (resultType "complete"), as a client of
// 2026-07-28 requires of every result: the SDK marks a tool handler's
// result, but not a result a middleware answers with (callByName). An
// input-required result keeps its mark.
func completed(res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil || res.NeedsInput() || res.InputRequests != nil {
		return res
	}
	var out mcp.CallToolResult
	_ = json.Unmarshal([]byte(`{"resultType":"complete","content":[]}`), &out) // its resultType is unexported
	out.Meta, out.Content, out.StructuredContent, out.IsError = res.Meta, res.Content, res.StructuredContent, res.IsError
	return &out
}
