//lint:file-ignore SA1019 sampling and roots are deprecated by MCP 2026-07-28, but upstreams of the earlier revisions ask for them, and a 2026-07-28 client answers them inside its rounds.

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/upstream"
)

// Held calls: an upstream of a revision before 2026-07-28 asks for input
// (sampling, elicitation, roots) with requests of its own while a call is
// in flight, and a client of 2026-07-28 cannot be sent requests. So a call
// of such a client runs on its own; when the upstream asks, the client gets
// an input-required result (SEP-2322) whose requestState names the held
// call, and its retry with that state delivers the answers to the upstream's
// waiting requests and waits for the next question or the result. This is
// the one state the gateway keeps between a 2026-07-28 client's requests:
// it lives in this process (a retry must reach the same replica), for at
// most heldIdle between rounds, and at most maxHeld calls wait at once. An
// upstream of 2026-07-28 asks inside its result instead, which passes
// through untouched (roundtrip.go).

const (
	// heldPrefix starts the requestState of a held call.
	heldPrefix = "toolsift-held:"
	// heldIdle is how long a held call waits for the client's next round.
	heldIdle = 5 * time.Minute
	// maxHeld bounds the calls waiting for their clients' answers.
	maxHeld = 1024
)

// heldCalls are a proxy's held calls by requestState. The zero value is
// ready to use.
type heldCalls struct {
	mu    sync.Mutex
	calls map[string]*heldCall
}

// heldCall is one call of a 2026-07-28 client that runs on its own.
type heldCall struct {
	name   string                  // the tool called, which the retry must name too
	user   string                  // who called it (authn.IdentityFrom), whom the retry must come from too
	asks   chan *heldAsk           // the upstream's questions, from clientRequests
	done   chan heldOutcome        // the call's end (capacity 1)
	cancel context.CancelCauseFunc // ends the call
	timer  *time.Timer             // heldIdle while waiting for the client

	mu      sync.Mutex
	pending map[string]*heldAsk // asked of the client, not yet answered, by id
	next    int                 // for ids
}

type heldAsk struct {
	method string
	params json.RawMessage
	answer chan heldAnswer // capacity 1
}

type heldAnswer struct {
	raw json.RawMessage
	err error
}

type heldOutcome struct {
	res *mcp.CallToolResult
	err error
}

type heldKey struct{}

// heldOf is the held call ctx belongs to, nil for any other.
func heldOf(ctx context.Context) *heldCall {
	h, _ := ctx.Value(heldKey{}).(*heldCall)
	return h
}

// ask puts an upstream's request to the client of the held call and waits
// for its answer: clientRequests calls it for a 2026-07-28 client.
func (h *heldCall) ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	a := &heldAsk{method: method, params: params, answer: make(chan heldAnswer, 1)}
	select {
	case h.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case ans := <-a.answer:
		return ans.raw, ans.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// callFor calls the tool name for the client of req: through callRound for
// a client of 2026-07-28, else as the proxy calls (call.go).
func (p *proxy) callFor(ctx context.Context, req *mcp.CallToolRequest, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	ctx = withRound(withProgress(ctx, req), req)
	if isRound(ctx) {
		return p.callRound(ctx, req.Session, name, args, req.Params)
	}
	return p.call(ctx, req.Session, name, args)
}

// callRound answers a tools/call of a 2026-07-28 client: a retry naming a
// held call resumes it, any other call starts one (the Hub passes a
// 2026-07-28 upstream's own rounds through: roundtrip.go).
func (p *proxy) callRound(ctx context.Context, ss *mcp.ServerSession, name string, args json.RawMessage, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	if state := params.RequestState; strings.HasPrefix(state, heldPrefix) {
		h := p.held.take(state)
		if h == nil || h.name != name || h.user != caller(ctx) {
			if h != nil {
				p.held.put(state, h) // not this call's: leave it for its own
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("requestState: no call of %s waits for it here (unknown, expired, answered, or held by another toolsift process)", name)}
		}
		if err := h.deliver(params.InputResponses); err != nil {
			p.held.put(state, h)
			return nil, err
		}
		h.mu.Lock()
		unanswered := len(h.pending)
		h.mu.Unlock()
		if unanswered > 0 {
			return p.inputRequired(h) // the rest asked again
		}
		return p.await(ctx, h)
	}
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx)) // it outlives this request
	h := &heldCall{name: name, user: caller(ctx), asks: make(chan *heldAsk), done: make(chan heldOutcome, 1), cancel: cancel, pending: map[string]*heldAsk{}}
	hctx = context.WithValue(hctx, heldKey{}, h)
	go func() {
		res, err := p.call(hctx, ss, name, args)
		h.done <- heldOutcome{res, err}
	}()
	return p.await(ctx, h)
}

// caller is who makes the request of ctx, "" when nobody said.
func caller(ctx context.Context) string {
	id, _ := authn.IdentityFrom(ctx)
	return id.User
}

// await waits for the held call's next question or its end: a question
// (with any others already asked) goes to the client as an input-required
// result naming the call; the end is the call's answer.
func (p *proxy) await(ctx context.Context, h *heldCall) (*mcp.CallToolResult, error) {
	select {
	case o := <-h.done:
		// The call's ctx ends with this request's, once the SDK has
		// written the result (the result bytes in flight are counted
		// until then: holdResult).
		context.AfterFunc(ctx, func() { h.cancel(nil) })
		return o.res, o.err
	case a := <-h.asks:
		h.mu.Lock()
		h.add(a)
		for more := true; more; {
			select {
			case a := <-h.asks:
				h.add(a)
			default:
				more = false
			}
		}
		h.mu.Unlock()
	case <-ctx.Done():
		h.cancel(context.Cause(ctx)) // authn.ErrRevoked, for one: the call's outcome says so
		return nil, ctx.Err()
	}
	return p.inputRequired(h)
}

// add records a question; h.mu is held.
func (h *heldCall) add(a *heldAsk) {
	h.next++
	h.pending[fmt.Sprintf("toolsift-%d", h.next)] = a
}

// inputRequired holds h under a new requestState and returns the result
// that asks its pending questions.
func (p *proxy) inputRequired(h *heldCall) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	asks := make(mcp.InputRequestMap, len(h.pending))
	for id, a := range h.pending {
		in, err := inputRequest(a.method, a.params)
		if err != nil {
			delete(h.pending, id)
			a.answer <- heldAnswer{err: err}
			continue
		}
		asks[id] = in
	}
	h.mu.Unlock()
	state, err := p.held.hold(h)
	if err != nil {
		h.cancel(nil)
		return nil, err
	}
	var res mcp.CallToolResult
	_ = json.Unmarshal([]byte(`{"resultType":"input_required"}`), &res) // its resultType is unexported
	res.InputRequests, res.RequestState = asks, state
	return &res, nil
}

// inputRequest is an upstream's request as an input request of a result.
func inputRequest(method string, params json.RawMessage) (mcp.InputRequest, error) {
	var in mcp.InputRequest
	switch method {
	case upstream.MethodElicit:
		in = &mcp.ElicitParams{}
	case upstream.MethodCreateMessage:
		in = &mcp.CreateMessageWithToolsParams{}
	case upstream.MethodListRoots:
		in = &mcp.ListRootsParams{}
	default:
		return nil, &upstream.RPCError{Code: codeDeclined, Message: fmt.Sprintf("toolsift serve: %s cannot be asked of a client of 2026-07-28", method)}
	}
	if err := json.Unmarshal(params, in); err != nil {
		return nil, fmt.Errorf("toolsift serve: %s params: %w", method, err)
	}
	return in, nil
}

// deliver gives the client's answers to the questions they answer; a
// question left unanswered is asked again in the next result.
func (h *heldCall) deliver(responses mcp.InputResponseMap) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range responses {
		if _, ok := h.pending[id]; !ok {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses: %q answers no question of this call", id)}
		}
	}
	for id, r := range responses {
		a := h.pending[id]
		raw, err := json.Marshal(r)
		a.answer <- heldAnswer{raw: raw, err: err}
		delete(h.pending, id)
	}
	return nil
}

// hold keeps h under a new requestState until take, or heldIdle, which
// ends the call.
func (c *heldCalls) hold(h *heldCall) (string, error) {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	state := heldPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) >= maxHeld {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("toolsift serve: %d calls already wait for their clients' answers", maxHeld)}
	}
	if c.calls == nil {
		c.calls = map[string]*heldCall{}
	}
	c.calls[state] = h
	h.timer = time.AfterFunc(heldIdle, func() {
		if c.take(state) != nil {
			h.cancel(nil)
		}
	})
	return state, nil
}

// put keeps h under state again (a retry that could not resume it).
func (c *heldCalls) put(state string, h *heldCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[state] = h
	h.timer.Reset(heldIdle)
}

// take removes and returns the call held under state, nil if none.
func (c *heldCalls) take(state string) *heldCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.calls[state]
	if h != nil {
		delete(c.calls, state)
		h.timer.Stop()
	}
	return h
}
