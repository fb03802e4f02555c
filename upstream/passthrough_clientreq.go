//lint:file-ignore SA1019 sampling and roots are deprecated as of MCP 2026-07-28, but servers still ask for them during the deprecation window and a proxy forwards what they ask.

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Methods of the requests a server may send its client (see
// ClientRequests).
const (
	MethodCreateMessage = "sampling/createMessage"
	MethodElicit        = "elicitation/create"
	MethodListRoots     = "roots/list"
)

// ClientCapabilities are the server→client requests a ClientRequests
// handler answers. The Hub declares them to every server in initialize,
// and declines the others.
type ClientCapabilities struct {
	// Sampling: sampling/createMessage. SamplingTools also declares that
	// requests may carry tools (sampling.tools).
	Sampling, SamplingTools bool
	// Elicitation: elicitation/create in form mode. ElicitationURL also
	// declares URL mode.
	Elicitation, ElicitationURL bool
	// Roots: roots/list.
	Roots bool
}

// ClientRequest is a request an upstream server sent its client: the Hub.
type ClientRequest struct {
	// Server is the configured name of the server that sent it.
	Server string
	// Method is MethodCreateMessage, MethodElicit or MethodListRoots.
	Method string
	// Params are the request's params as JSON (re-encoded by the SDK from
	// what the server sent: every field MCP defines for the method).
	Params json.RawMessage
	// Call is what the Hub request it belongs to was for: the qualified
	// tool name of a Hub.Call, the URI of a Passthrough.ReadResource or
	// the qualified prompt name of a Passthrough.GetPrompt. Empty when the
	// Hub cannot tell (see ClientRequests).
	Call string
}

// ClientRequests answers the requests upstream servers send their client:
// sampling, elicitation and roots. Set it in HubOptions to let a proxy
// forward them to its own client.
//
// HandleClientRequest returns the result object as JSON (for
// sampling/createMessage a CreateMessageResult, and so on), sent to the
// server as is, but for elicitation: an accepted form's content gets the
// defaults of the requested schema's fields it leaves out (SEP-1034), and
// the params the handler gets always say their mode ("form" or "url"). An
// error declines the request: a *RPCError is sent as that JSON-RPC error;
// any other error as an internal error with its text. It is called
// concurrently, from the SDK's goroutines; ctx ends when the server
// cancels its request, its session ends, or the Hub request it belongs to
// returns.
//
// Which Hub request a server→client request belongs to: when the server
// sends it inside a multi round-trip result (protocol 2026-07-28), the SDK
// hands over the ctx of that Hub request, and the answer is exact. When
// the server sends it as its own JSON-RPC request (earlier revisions),
// MCP does not say; the Hub takes the only Hub request in flight to that
// server, if there is exactly one, and none otherwise. ctx carries the
// values of the ctx that Hub request was made with, so a proxy that put
// its client's session there finds it with ctx.Value; when the Hub cannot
// tell, ClientRequest.Call is empty, ctx carries none of them, and the
// handler should decline rather than guess.
type ClientRequests interface {
	// Capabilities says which requests are answered; it is read once per
	// connection, before initialize.
	Capabilities() ClientCapabilities
	HandleClientRequest(ctx context.Context, req ClientRequest) (json.RawMessage, error)
}

// RPCError is a JSON-RPC error: one a ClientRequests handler declines a
// request with, or passes on from its own client, and the error a server
// answered a ReadResource or GetPrompt with (wrapped, with the server's
// name). The SDK sends its own message for code -32601 (method not
// found), whatever Message says: to tell a server why, use another code
// (the Hub declines with -32600).
type RPCError struct {
	Code    int64
	Message string
	Data    json.RawMessage
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// newClient returns the SDK client for one connection attempt to s: the
// capabilities of HubOptions.ClientRequests, and handlers that route
// list changes, progress and server→client requests to the Hub.
func (s *server) newClient() *mcp.Client {
	h := s.h
	var caps ClientCapabilities
	if h.opts.ClientRequests != nil {
		caps = h.opts.ClientRequests.Capabilities()
	}
	// Without roots (the SDK's default declares them): servers such as
	// server-filesystem would otherwise ask for them and replace their
	// configured folders with ours.
	sc := &mcp.ClientCapabilities{}
	if caps.Sampling || caps.SamplingTools {
		sc.Sampling = &mcp.SamplingCapabilities{}
		if caps.SamplingTools {
			sc.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
		}
	}
	if caps.Elicitation || caps.ElicitationURL {
		sc.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		if caps.ElicitationURL {
			sc.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	if caps.Roots {
		sc.RootsV2 = &mcp.RootCapabilities{}
	}
	opts := &mcp.ClientOptions{
		Logger:       h.opts.Logger,
		Capabilities: sc,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.relist <- struct{}{}:
			default:
			}
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.feat.changed(featResources)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.feat.changed(featPrompts)
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params != nil {
				h.pt.calls.onProgress(s, req.Params)
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				s.resourceUpdated(req.Params.URI) // see subscribe.go
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if req.Params != nil {
				h.pt.calls.onLog(s, req.Params) // see logs.go
			}
		},
	}
	// The SDK calls these two for the requests of a multi round-trip
	// result; the middleware below answers those sent as requests.
	if sc.Sampling != nil {
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			var out mcp.CreateMessageWithToolsResult
			if err := s.answerTyped(ctx, MethodCreateMessage, req.Params, &out); err != nil {
				return nil, err
			}
			return &out, nil
		}
	}
	if sc.Elicitation != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			var out mcp.ElicitResult
			if err := s.answerTyped(ctx, MethodElicit, req.Params, &out); err != nil {
				return nil, err
			}
			return &out, nil
		}
	}
	// The Hub makes the rounds of multi round-trip results itself, or
	// leaves them to the caller (roundtrip.go), which the SDK's own
	// middleware cannot.
	opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolsift", Version: "0.1.0"}, opts)
	client.AddReceivingMiddleware(s.clientRequestMiddleware(caps))
	client.AddSendingMiddleware(s.roundTrips(caps))
	return client
}

// clientRequestMiddleware answers the server→client requests s sends as
// requests: those caps offers through ClientRequests, with its result as
// is, the others declined with an error that says so.
func (s *server) clientRequestMiddleware(caps ClientCapabilities) mcp.Middleware {
	offered := map[string]bool{
		MethodCreateMessage: caps.Sampling || caps.SamplingTools,
		MethodElicit:        caps.Elicitation || caps.ElicitationURL,
		MethodListRoots:     caps.Roots,
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ok, known := offered[method]
			switch {
			case !known:
				return next(ctx, method, req)
			case !ok:
				// Not -32601 (method not found): the SDK replaces the
				// message of such errors with its own, and the server
				// would not learn why.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("toolsift does not offer %s to server %s (its client did not declare the capability)", method, s.name)}
			}
			params, err := json.Marshal(req.GetParams())
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("toolsift: encoding %s params: %v", method, err)}
			}
			raw, err := s.answer(ctx, method, params)
			if err != nil {
				return nil, err
			}
			return &rawResult{raw: raw}, nil
		}
	}
}

// answerTyped answers a request the SDK hands over decoded, decoding the
// answer into out.
func (s *server) answerTyped(ctx context.Context, method string, params any, out any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("toolsift: encoding %s params: %v", method, err)}
	}
	raw, err := s.answer(ctx, method, b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("toolsift: the answer to %s is not its result: %v", method, err)}
	}
	return nil
}

// answer asks HubOptions.ClientRequests for the result of a request of s,
// with the ctx and Call of the Hub request it belongs to, and turns a
// refusal into the JSON-RPC error the server gets.
func (s *server) answer(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	h := s.h
	if method == MethodElicit {
		params = elicitParams(params)
	}
	req := ClientRequest{Server: s.name, Method: method, Params: params}
	if r := h.pt.calls.requestOf(ctx, s); r != nil {
		req.Call = r.name
		var cancel context.CancelFunc
		ctx, cancel = joinRequest(ctx, r)
		defer cancel()
	}
	raw, err := h.opts.ClientRequests.HandleClientRequest(ctx, req)
	if err != nil {
		// Debug: the handler logs its own outcome (toolsift serve does),
		// and a server asking at its start is routine.
		h.opts.Logger.Debug("upstream: server request declined", "server", s.name, "method", method, "error", err)
		var re *RPCError
		if errors.As(err, &re) {
			return nil, &jsonrpc.Error{Code: re.Code, Message: re.Message, Data: re.Data}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "toolsift: " + err.Error()}
	}
	if !isJSONObject(raw) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("toolsift: the answer to %s is not a JSON object", method)}
	}
	if method == MethodElicit {
		raw = elicitDefaults(params, raw)
	}
	return raw, nil
}

// rawResult is a result sent to a server exactly as a ClientRequests
// handler gave it.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}
