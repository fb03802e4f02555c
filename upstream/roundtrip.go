//lint:file-ignore SA1019 sampling and roots are deprecated as of MCP 2026-07-28, but its multi round-trip results still ask for them.

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip requests (SEP-2322, MCP 2026-07-28). A server of that
// revision that needs input during a tools/call, prompts/get or
// resources/read (an elicitation, a sampling, the roots) answers with an
// input-required result: its input requests, each under an id, and an
// opaque requestState; the client retries the request with its answers
// under the same ids (inputResponses) and the state.
//
// By default the Hub makes the rounds itself, as the SDK's client would:
// each input request goes to HubOptions.ClientRequests with the ctx of
// the Hub request (so ClientRequest.Call is exact), and the request is
// retried with the answers, at most maxRounds times. A proxy whose own
// client speaks 2026-07-28 passes the rounds on instead (WithInputRound):
// the server's input-required result reaches that client as it is (ids,
// requestState), and the client's retry goes to the server as it is, so
// the server, not the proxy, keeps the state between rounds and checks it.

// InputRound is a request's part in a multi round-trip request whose
// rounds the caller makes itself (see WithInputRound).
type InputRound struct {
	// Responses are the caller's inputResponses, a JSON object of answers
	// by input request id, and State its requestState: both empty on the
	// first round, and sent to the server as they are on a retry.
	Responses json.RawMessage
	State     string
	// Capabilities are the capabilities of the caller's own client (MCP
	// ClientCapabilities as JSON), sent to the server in the request's
	// _meta in place of the Hub's, so that the server asks only for input
	// that client can give and refuses what needs a capability it lacks.
	// Empty: the Hub's.
	Capabilities json.RawMessage
}

type roundKey struct{}

// WithInputRound marks ctx for a Hub.Call, or a Passthrough.GetPrompt or
// ReadResource, whose multi round-trip rounds the caller makes itself.
// When the server's session speaks MCP 2026-07-28 or later, the request carries r's
// responses, state and capabilities, and returns the server's answer as
// it is: an input-required result (Result.Raw, or the JSON result, has its
// resultType, inputRequests and requestState) is not fulfilled through
// ClientRequests, and a JSON-RPC error of the server (a tampered state, a
// capability the caller's client lacks) is returned as an error wrapping
// *RPCError, for the caller to pass on, not as a Result with IsError.
// With a server of an earlier revision r is ignored: such a server sends
// its input requests as requests of its own, through ClientRequests.
func WithInputRound(ctx context.Context, r InputRound) context.Context {
	return context.WithValue(ctx, roundKey{}, &r)
}

func roundOf(ctx context.Context) *InputRound {
	r, _ := ctx.Value(roundKey{}).(*InputRound)
	return r
}

// speaks2026 reports whether cs negotiated MCP 2026-07-28 or later.
func speaks2026(cs *mcp.ClientSession) bool {
	res := cs.InitializeResult()
	return res != nil && res.ProtocolVersion >= "2026-07-28"
}

// roundParams are the params of the requests that take part in multi
// round-trips.
type roundParams interface {
	*mcp.CallToolParams | *mcp.GetPromptParams | *mcp.ReadResourceParams
}

// passRound puts ctx's InputRound into params when the caller makes the
// rounds and cs speaks 2026-07-28, and reports whether it did.
func passRound[P roundParams](ctx context.Context, cs *mcp.ClientSession, params P) (bool, error) {
	r := roundOf(ctx)
	if r == nil || !speaks2026(cs) {
		return false, nil
	}
	var responses mcp.InputResponseMap
	if len(r.Responses) > 0 && string(r.Responses) != "null" {
		if err := json.Unmarshal(r.Responses, &responses); err != nil {
			return true, &RPCError{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses: %v", err)}
		}
	}
	meta := mcp.Meta{}
	if len(r.Capabilities) > 0 {
		meta[mcp.MetaKeyClientCapabilities] = r.Capabilities
	}
	switch p := any(params).(type) {
	case *mcp.CallToolParams:
		p.InputResponses, p.RequestState, p.Meta = responses, r.State, withMeta(p.Meta, meta)
	case *mcp.GetPromptParams:
		p.InputResponses, p.RequestState, p.Meta = responses, r.State, withMeta(p.Meta, meta)
	case *mcp.ReadResourceParams:
		p.InputResponses, p.RequestState, p.Meta = responses, r.State, withMeta(p.Meta, meta)
	}
	return true, nil
}

func withMeta(m, add mcp.Meta) mcp.Meta {
	if len(add) == 0 {
		return m
	}
	if m == nil {
		m = mcp.Meta{}
	}
	for k, v := range add {
		m[k] = v
	}
	return m
}

// maxRounds bounds the rounds the Hub makes itself, and maxShed the
// rounds a server answers with no input request (load shedding): the
// SDK client's limits.
const (
	maxRounds = 10
	maxShed   = 3
)

// roundTrips is the sending middleware that makes the multi round-trip
// rounds of s's requests (the SDK's own, turned off in newClient, cannot
// leave them to the caller): a request whose ctx has an InputRound gets
// the server's answer as it is.
func (s *server) roundTrips(caps ClientCapabilities) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" && method != "prompts/get" && method != "resources/read" || roundOf(ctx) != nil {
				return next(ctx, method, req)
			}
			cs, _ := req.GetSession().(*mcp.ClientSession)
			shed := 0
			for round := 1; ; round++ {
				res, err := next(ctx, method, req)
				if err != nil || cs == nil {
					return res, err
				}
				asks, state, ok := inputRequestsOf(res)
				if !ok {
					return res, nil
				}
				if len(asks) == 0 {
					shed++
				}
				if shed >= maxShed {
					return nil, fmt.Errorf("multi round-trip: server %s shed the request %d times", s.name, shed)
				}
				if round >= maxRounds {
					return nil, fmt.Errorf("multi round-trip: server %s asked for input %d times", s.name, round)
				}
				answers, err := s.fulfil(ctx, caps, asks)
				if err != nil {
					return nil, err
				}
				if req, err = retryRequest(cs, req, answers, state); err != nil {
					return nil, err
				}
			}
		}
	}
}

// inputRequestsOf returns the input requests and state of an
// input-required result; ok is false for any other result.
func inputRequestsOf(res mcp.Result) (mcp.InputRequestMap, string, bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.InputRequests, r.RequestState, r.InputRequests != nil
	case *mcp.GetPromptResult:
		return r.InputRequests, r.RequestState, r.InputRequests != nil
	case *mcp.ReadResourceResult:
		return r.InputRequests, r.RequestState, r.InputRequests != nil
	}
	return nil, "", false
}

// retryRequest is req again with the answers and state, its params a copy
// (the caller's are never changed).
func retryRequest(cs *mcp.ClientSession, req mcp.Request, answers mcp.InputResponseMap, state string) (mcp.Request, error) {
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &cp}, nil
	case *mcp.GetPromptParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &cp}, nil
	case *mcp.ReadResourceParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &cp}, nil
	}
	return nil, fmt.Errorf("multi round-trip: unsupported params %T", req.GetParams())
}

// fulfil answers a round's input requests, concurrently, through
// ClientRequests with ctx (the Hub request's); roots are answered with
// the Hub's root list, which is empty.
func (s *server) fulfil(ctx context.Context, caps ClientCapabilities, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		answers = make(mcp.InputResponseMap, len(asks))
		first   error
	)
	for id, ask := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer, err := s.fulfilOne(ctx, caps, ask)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("multi round-trip: input request %q of server %s: %w", id, s.name, err)
				}
				return
			}
			answers[id] = answer
		}()
	}
	wg.Wait()
	return answers, first
}

func (s *server) fulfilOne(ctx context.Context, caps ClientCapabilities, ask mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := ask.(type) {
	case *mcp.ElicitParams:
		if !caps.Elicitation && !caps.ElicitationURL {
			return nil, fmt.Errorf("toolsift does not offer %s (its client did not declare the capability)", MethodElicit)
		}
		var out mcp.ElicitResult
		return &out, s.answerTyped(ctx, MethodElicit, p, &out)
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		if !caps.Sampling && !caps.SamplingTools {
			return nil, fmt.Errorf("toolsift does not offer %s (its client did not declare the capability)", MethodCreateMessage)
		}
		var out mcp.CreateMessageWithToolsResult
		return &out, s.answerTyped(ctx, MethodCreateMessage, p, &out)
	case *mcp.ListRootsParams:
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	}
	return nil, fmt.Errorf("unknown input request %T", ask)
}
