package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// callArgs are call_tool's arguments.
type callArgs struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// callTool answers call_tool: any tool of the catalog, listed or not.
func (s *session) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a callArgs
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil {
		return errorResult("call_tool: arguments: %v", err), nil
	}
	a.Name = strings.TrimSpace(a.Name)
	if a.Name == "" {
		return errorResult("call_tool: name is empty: give a tool's name as search_tools returned it"), nil
	}
	if a.Name == think.SearchToolName || a.Name == CallToolName {
		return errorResult("call_tool: %s is this server's own tool: call it directly", a.Name), nil
	}
	s.touch(a.Name)
	return s.p.callFor(ctx, req, a.Name, orEmpty(a.Arguments)) // held.go
}

// callListed answers a call of a listed upstream tool (pinned or found).
func (s *session) callListed(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.touch(req.Params.Name)
	return s.p.callFor(ctx, req, req.Params.Name, orEmpty(req.Params.Arguments))
}

// callByName answers, on a static session (stateless HTTP, MCP
// 2026-07-28), a tools/call naming a tool of the catalog that is not on
// the list, as call_tool would: without a session there is no list for a
// found tool to join, so it is called by the name search_tools gave. This
// gives a caller nothing call_tool does not (any tool of the catalog, the
// quarantine refusing a changed one). ok is false when the request is
// not such a call: the SDK answers it.
func (s *session) callByName(ctx context.Context, method string, req mcp.Request) (res *mcp.CallToolResult, ok bool, err error) {
	call, isCall := req.(*mcp.CallToolRequest)
	if !s.static || method != "tools/call" || !isCall || call.Params == nil {
		return nil, false, nil
	}
	name := call.Params.Name
	if name == think.SearchToolName || name == CallToolName {
		return nil, false, nil
	}
	s.mu.Lock()
	_, listed := s.defs[name]
	s.mu.Unlock()
	if listed {
		return nil, false, nil
	}
	if _, known := s.p.get(ctx, name); !known && !s.p.connecting(ctx, name, true) { // out of the caller's scope too (policy.go)
		return nil, false, nil // the SDK's unknown tool, with unknownToolHint's hint
	}
	res, err = s.p.callFor(ctx, call, name, orEmpty(call.Params.Arguments))
	if err == nil && call.ProtocolVersion() >= wire2026 {
		res = completed(res) // roundtrip.go
	}
	return res, true, err
}

// connecting reports whether name is qualified by a server still
// connecting for the first time (upstream.Hub.Unlisted) that the caller
// may reach (scope.reaches; any server, reach false or no policy): its
// call is routed, and waited for (the Toolset's Call, within
// toolsift.Options.ConnectWait), rather than answered as a tool no server
// has; the Hub's routing then holds it to the caller's scope (gate).
func (p *proxy) connecting(ctx context.Context, name string, reach bool) bool {
	if name == "" {
		return false
	}
	if a := p.access(ctx); a != nil && reach {
		ctx = upstream.WithServerScope(ctx, a.sc.reaches)
	}
	now, cancel := context.WithCancel(ctx)
	cancel() // asked, not waited for: the servers name stands for still connecting
	return len(p.hub.WaitListed(now, name)) > 0
}

// withProgress passes the upstream server's progress notices of a call on
// to the client, under the client's progress token, when it asked for them.
// Cancellation needs nothing: the SDK ends ctx when the client cancels, and
// the Hub tells the upstream server.
func withProgress(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return ctx
	}
	ss := req.Session
	return upstream.WithProgress(ctx, func(p upstream.CallProgress) {
		_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: text(p.Message),
		})
	})
}

// call calls an upstream tool through the Toolset, logs one line (server,
// tool, duration and outcome, never the arguments or the result) and
// reports its audit record (audit.Report: Options.Audit's middleware
// writes it) before it returns. A failure
// is a result with isError set whose text names the tool and server, so
// that the model sees what happened; but the JSON-RPC error an upstream
// answers a call of a client of 2026-07-28 with is that client's error
// (roundtrip.go).
func (p *proxy) call(ctx context.Context, ss *mcp.ServerSession, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	start := time.Now()
	ctx, span := p.startCall(ctx, name) // trace.go; nil without Options.Telemetry.Tracer
	spanOutcome, spanServer, spanTool := "rate-limited", "", ""
	if span != nil {
		if t, ok := p.ts.Get(name); ok { // a refused call's span names its server too
			spanServer, spanTool = t.Server, t.OriginalName
		}
		defer func() { endCall(span, spanServer, spanTool, spanOutcome) }()
	}
	if r := p.limited(ctx, name); r != nil { // ratelimit.go: before any upstream is reached
		return p.refuseLimited(ctx, ss, name, r), nil
	}
	spanOutcome = "quarantined"
	// The Hub asks the gate where it routes the call (policy.go): a tool
	// out of the caller's scope is answered as one no server has, a
	// changed one is refused (quarantine.go).
	g := &gate{a: p.access(ctx)}
	ctx = upstream.WithToolScope(ctx, g.check)
	t, known := p.ts.Get(name)
	var res tool.Result
	var err error
	server := p.perUser.serverOf(name) // a per-user tool, even before its catalog is listed
	if known {
		server = ""
		if p.perUser.has(t.Server) {
			server = t.Server
		}
	}
	switch {
	case server != "" && !g.allows(server, name):
		// Routed to the caller's own session of a per-user server, by
		// the name's server: out of scope, it is not called at all.
		g.hidden.Store(true)
		res, err = p.ts.Call(upstream.WithServerScope(ctx, noServer), name, args)
	case server != "":
		if msg, refused := p.quarantine().refusal(name); refused {
			// Changed as the shared Hub lists it (the catalog's); the
			// caller's own session's Hub refuses its own changes (gate).
			return p.refuseQuarantined(ctx, ss, name, msg), nil
		}
		id, _ := authn.IdentityFrom(ctx)
		res, err = p.perUser.call(withSession(ctx, ss), id, server, name, args)
	case !known && g.a != nil && p.connecting(ctx, name, false) && !p.connecting(ctx, name, true):
		// Of a server still connecting that the caller may not reach:
		// answered now, not waited for, as a tool no server has.
		g.hidden.Store(true)
		res, err = p.ts.Call(upstream.WithServerScope(ctx, noServer), name, args)
	default:
		res, err = p.ts.Call(withSession(ctx, ss), name, args)
	}
	if c := g.changed.Load(); c != nil {
		msg, _ := quarantine{name: *c}.refusal(name)
		return p.refuseQuarantined(ctx, ss, name, msg), nil
	}
	hidden := g.hidden.Load()
	disabled := errors.Is(err, upstream.ErrToolDisabled)
	if disabled {
		// Filtered out by its server's config: the Hub's error names the
		// config, which is the admin's, not the caller's to learn. Answered
		// as a tool no server has, as a hidden one is.
		res, err = p.ts.Call(upstream.WithServerScope(ctx, noServer), name, args)
	}
	outcome := "ok"
	switch {
	case hidden:
		outcome = "out-of-scope"
	case disabled:
		outcome = "disabled"
	case err != nil && errors.Is(context.Cause(ctx), authn.ErrRevoked):
		outcome = "revoked"
	case err != nil && errors.Is(err, ErrLoginNeeded):
		outcome = "login-needed"
	case err != nil && errors.Is(err, tool.ErrUnknown):
		outcome = "unknown"
	case err != nil && errors.Is(err, tool.ErrUnavailable):
		outcome = "unavailable"
	case err != nil && errors.Is(err, tool.ErrInvalidArguments):
		outcome = "invalid-arguments"
	case err != nil && ctx.Err() != nil:
		outcome = "cancelled"
	case err != nil:
		outcome = "error"
	case res.IsError:
		outcome = "tool-error"
	}
	took := time.Since(start)
	p.metrics.called(ctx, cmp.Or(t.Server, server), outcome, took)
	spanOutcome, spanServer, spanTool = outcome, cmp.Or(t.Server, server), t.OriginalName
	if p.log.Enabled(ctx, slog.LevelInfo) { // its attributes are built only for a line that is written
		attrs := []any{"tool", name, "outcome", outcome, "duration", took}
		if known {
			attrs = append(attrs, "server", t.Server, "upstream_tool", t.OriginalName)
		}
		p.logger(ctx, ss).Info("call", withError(attrs, err)...)
	}
	rec := audit.Record{Time: start, Tool: name, Duration: took, Outcome: outcome}
	if known {
		rec.Server, rec.UpstreamTool = t.Server, t.OriginalName
	}
	audit.Report(ctx, rec)
	if err == nil {
		if refusal := p.holdResult(ctx, name, res); refusal != nil {
			p.logger(ctx, ss).Warn("result refused", "tool", name, "error", refusal)
			return refusal, nil
		}
	}
	if rpc := roundError(ctx, err); rpc != nil {
		return nil, rpc
	}
	if err != nil {
		msg := text(err.Error()) // it may quote the server
		if errors.Is(err, tool.ErrUnknown) {
			msg += "; call search_tools to find the tool you need"
		}
		return errorResult("%s", msg), nil
	}
	if outcome == "ok" {
		p.learnCall(ctx, name) // learn.go
	}
	return result(res), nil
}

// refuseQuarantined answers a call of a quarantined tool (listed, by
// call_tool or by name) with msg, the refusal naming toolbench trust, and
// logs and audits it (outcome quarantined).
func (p *proxy) refuseQuarantined(ctx context.Context, ss *mcp.ServerSession, name, msg string) *mcp.CallToolResult {
	p.logger(ctx, ss).Warn("call refused: tool quarantined", "tool", name, "outcome", "quarantined")
	rec := audit.Record{Time: time.Now(), Tool: name, Outcome: "quarantined"}
	if t, ok := p.ts.Get(name); ok {
		rec.Server, rec.UpstreamTool = t.Server, t.OriginalName
	}
	audit.Report(ctx, rec)
	p.metrics.called(ctx, rec.Server, rec.Outcome, 0)
	return errorResult("%s", msg)
}

// holdResult counts res against the result bytes in flight until the
// SDK has written the answer (it ends the handler's ctx then), waiting
// while other results hold too many; it returns the result to send
// instead when res cannot be held (see Options.Limits.MaxResultBytes).
func (p *proxy) holdResult(ctx context.Context, name string, res tool.Result) *mcp.CallToolResult {
	n := int64(max(len(res.Raw), len(res.Content)))
	switch err := p.results.acquire(ctx, n); {
	case errors.Is(err, errTooLarge):
		return errorResult("the result of %s (%d bytes) was not returned: over the limit of %d bytes of results in flight (toolsift serve --max-result-bytes)", name, n, p.results.max)
	case err != nil:
		return errorResult("the result of %s was not returned: %v", name, err)
	}
	context.AfterFunc(ctx, func() { p.results.release(n) })
	return nil
}

// unknownToolHint adds a hint to the SDK's "unknown tool" error, the answer
// to a tools/call of a tool not on the session's list: a tool another
// session found (each session's list is its own), or a name the client
// guessed. It says how to reach the tool: call_tool, or search_tools to add
// it to this session's list. Other errors are returned as they are.
func (p *proxy) unknownToolHint(ctx context.Context, req mcp.Request, err error) error {
	call, ok := req.(*mcp.CallToolRequest)
	var rpc *jsonrpc.Error
	if !ok || call.Params == nil || !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams ||
		rpc.Message != fmt.Sprintf("unknown tool %q", call.Params.Name) {
		return err
	}
	name := call.Params.Name
	hint := fmt.Sprintf("no tool has this name; %s finds tools by what they do", think.SearchToolName)
	if _, ok := p.get(ctx, name); ok { // (a static session calls it: callByName); out of scope: no tool has it
		hint = fmt.Sprintf("it is not on this session's tool list (the tools %s finds join the list of the session that searched); "+
			"call it through %s with {\"name\": %q, \"arguments\": {...}}, or call %s to add it to this list", think.SearchToolName, CallToolName, name, think.SearchToolName)
	}
	return &jsonrpc.Error{Code: rpc.Code, Message: rpc.Message + ": " + hint, Data: rpc.Data}
}

// withError is a log line's attributes with the error, when there is one
// (a success logs no "error=<nil>").
func withError(attrs []any, err error) []any {
	if err != nil {
		attrs = append(attrs, "error", err)
	}
	return attrs
}
