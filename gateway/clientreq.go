//lint:file-ignore SA1019 sampling and roots are deprecated by MCP 2026-07-28, but clients and servers of the earlier revisions use them, and the proxy passes them on.

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/upstream"
)

// Requests from upstream servers to their client (sampling, elicitation,
// roots) go to the proxy's client whose call caused them: each call the
// proxy makes carries the client's session in its ctx, and the Hub hands
// the values of the call's ctx to the ClientRequests handler (see
// upstream.ClientRequests for how it tells which call a request belongs to). A
// request the Hub cannot place, or that the client did not declare the
// capability for, is declined with a JSON-RPC error saying why.

type sessionKey struct{}

// withSession marks ctx as a call made for a client session, whose log
// messages go to that session (logs.go).
func withSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return withLogs(context.WithValue(ctx, sessionKey{}, ss), ss)
}

// codeDeclined is JSON-RPC's "invalid request", as the Hub declines with:
// not -32601 (method not found), whose message the SDK replaces with its
// own, losing the reason.
const codeDeclined = -32600

// newClientRequests returns the handler for upstream.HubOptions.ClientRequests
// that forwards server→client requests to the proxy's clients. It declares
// sampling, elicitation and roots upstream; log, if not nil, gets one line
// per request (server, method, outcome; never the content). perMinute
// caps the sampling and elicitation requests of each upstream server
// (limits.go): zero means DefaultClientRequestsPerMinute, negative no cap.
func newClientRequests(log *slog.Logger, perMinute int) upstream.ClientRequests {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if perMinute == 0 {
		perMinute = DefaultClientRequestsPerMinute
	}
	return clientRequests{log, newServerRate(perMinute)}
}

type clientRequests struct {
	log  *slog.Logger
	rate *serverRate // nil: no cap
}

func (clientRequests) Capabilities() upstream.ClientCapabilities {
	return upstream.ClientCapabilities{Sampling: true, Elicitation: true, Roots: true}
}

func (c clientRequests) HandleClientRequest(ctx context.Context, req upstream.ClientRequest) (json.RawMessage, error) {
	out, err := c.handle(ctx, req)
	outcome := "forwarded"
	if err != nil {
		outcome = err.Error()
	}
	level := slog.LevelInfo
	if ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession); ss == nil {
		// Asked outside any client call, as servers such as
		// server-filesystem ask for roots when they start: routine.
		level = slog.LevelDebug
	}
	c.log.Log(ctx, level, "client request", "server", req.Server, "method", req.Method, "call", req.Call, "outcome", outcome)
	return out, err
}

func (c clientRequests) handle(ctx context.Context, req upstream.ClientRequest) (json.RawMessage, error) {
	if err := c.rate.allow(req.Server, req.Method); err != nil {
		return nil, err
	}
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	if ss == nil {
		return nil, &upstream.RPCError{Code: codeDeclined, Message: fmt.Sprintf("toolsift serve: %s from %s declined: no client call of this server is in flight to send it to", req.Method, req.Server)}
	}
	capability := map[string]string{upstream.MethodCreateMessage: "sampling", upstream.MethodElicit: "elicitation", upstream.MethodListRoots: "roots"}[req.Method]
	// The SDK's server cannot tell a client without roots from one with
	// roots {} (it decodes them into a struct), so roots/list is asked and
	// the client's own error, if any, passed on; a client of 2026-07-28
	// declares them in each request's _meta, which the SDK keeps as JSON.
	if capability == "" || ((capability != "roots" || heldOf(ctx) != nil) && !declares(ss, capability)) {
		return nil, &upstream.RPCError{Code: codeDeclined, Message: fmt.Sprintf("toolsift serve: %s from %s declined: the client did not declare %q", req.Method, req.Server, capability)}
	}
	if h := heldOf(ctx); h != nil {
		// A client of 2026-07-28 is asked inside its call's rounds (held.go).
		return h.ask(ctx, req.Method, req.Params)
	}
	var res any
	var err error
	switch req.Method {
	case upstream.MethodCreateMessage:
		var p mcp.CreateMessageWithToolsParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		res, err = ss.CreateMessageWithTools(ctx, &p)
	case upstream.MethodElicit:
		var p mcp.ElicitParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		res, err = ss.Elicit(ctx, &p)
	case upstream.MethodListRoots:
		res, err = ss.ListRoots(ctx, &mcp.ListRootsParams{})
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// declares reports whether the client of ss declared a capability in
// initialize.
func declares(ss *mcp.ServerSession, capability string) bool {
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return false
	}
	b, err := json.Marshal(ip.Capabilities)
	if err != nil {
		return false
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(b, &caps) != nil {
		return false
	}
	v, ok := caps[capability]
	return ok && string(v) != "null"
}
