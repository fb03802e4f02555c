package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the Gateway's spans.
const tracerName = "github.com/toolsift/toolsift/gateway"

// The attributes of the Gateway's spans (docs/serve.md, "Traces").
const (
	attrMethod       = attribute.Key("mcp.method.name")
	attrTool         = attribute.Key("gen_ai.tool.name")
	attrServer       = attribute.Key("toolsift.server")
	attrUpstreamTool = attribute.Key("toolsift.upstream_tool")
	attrOutcome      = attribute.Key("toolsift.outcome")
	attrResults      = attribute.Key("toolsift.search.results")
	attrOmitted      = attribute.Key("toolsift.search.omitted")
	attrTokens       = attribute.Key("toolsift.search.tokens")
	attrK            = attribute.Key("toolsift.search.k")
	attrUser         = attribute.Key("enduser.id")
)

// traceContext is the W3C Trace Context propagator: what a client's
// traceparent and tracestate are read with, from its HTTP request's
// headers and from a request's params._meta.
var traceContext = propagation.TraceContext{}

// metaCarrier reads a request's params._meta as a propagation carrier.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}
func (m metaCarrier) Set(key, value string) { m[key] = value }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// remoteParent is ctx with the client's span as the remote parent, when
// the request carries one: its params._meta's traceparent first (it is
// the request's own), else its HTTP request's header.
func remoteParent(ctx context.Context, req mcp.Request) context.Context {
	if p := req.GetParams(); p != nil {
		if meta := p.GetMeta(); meta != nil {
			if _, ok := meta["traceparent"].(string); ok {
				if c := traceContext.Extract(ctx, metaCarrier(meta)); trace.SpanContextFromContext(c).IsValid() {
					return c
				}
			}
		}
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil && ex.Header.Get("traceparent") != "" {
		return traceContext.Extract(ctx, propagation.HeaderCarrier(http.Header(ex.Header)))
	}
	return ctx
}

// traced is the receiving middleware of Options.Telemetry.Tracer: one server span
// per MCP request, named by its method, a child of the client's span
// when the request carries one (remoteParent). Its attributes are the
// method, the tool of a tools/call, the outcome (as the metrics count
// it) and, with Options.Telemetry.TraceUser, the caller's user; never the request's
// or result's text.
func (p *proxy) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, span := p.tracer.Start(remoteParent(ctx, req), method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attrMethod.String(method)))
		defer span.End()
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			span.SetAttributes(attrTool.String(call.Params.Name))
		}
		if p.opts.Telemetry.TraceUser {
			if id, ok := authn.IdentityFrom(ctx); ok && id.User != "" {
				span.SetAttributes(attrUser.String(id.User))
			}
		}
		res, err := next(ctx, method, req)
		outcome := "ok"
		switch r, _ := res.(*mcp.CallToolResult); {
		case err != nil:
			outcome = "error"
			span.SetStatus(codes.Error, "JSON-RPC error")
		case r != nil && r.IsError:
			outcome = "tool-error"
		}
		span.SetAttributes(attrOutcome.String(outcome))
		return res, err
	}
}

// startCall starts the span of one upstream call of name, a child of
// the request's; its end is endCall. A nil tracer starts none.
func (p *proxy) startCall(ctx context.Context, name string) (context.Context, trace.Span) {
	if p.tracer == nil {
		return ctx, nil
	}
	return p.tracer.Start(ctx, "call "+name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrTool.String(name)))
}

// endCall ends span (none when nil) with the call's server, upstream
// tool and outcome.
func endCall(span trace.Span, server, upstreamTool, outcome string) {
	if span == nil {
		return
	}
	span.SetAttributes(attrServer.String(server), attrUpstreamTool.String(upstreamTool), attrOutcome.String(outcome))
	switch outcome {
	case "ok", "tool-error":
	default:
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}

// tracedSearch is searchAnswer in a span of its own, search_tools, a
// child of the request's (with Options.Telemetry.Tracer): the k asked, the tools
// found and left out, the tokens of the answer's schemas and the
// outcome; never the query.
func (p *proxy) tracedSearch(ctx context.Context, query string, k int) (think.SearchAnswer, []tool.Tool, error) {
	if p.tracer == nil {
		return p.searchAnswer(ctx, query, k)
	}
	ctx, span := p.tracer.Start(ctx, think.SearchToolName, trace.WithAttributes(attrK.Int(k)))
	defer span.End()
	ans, tools, err := p.searchAnswer(ctx, query, k)
	switch {
	case errors.Is(err, retrieval.ErrSearch):
		span.SetAttributes(attrOutcome.String("invalid"))
	case err != nil:
		span.SetAttributes(attrOutcome.String("error"))
		span.SetStatus(codes.Error, "search failed")
	default:
		span.SetAttributes(attrOutcome.String("ok"), attrResults.Int(len(ans.Tools)), attrOmitted.Int(len(ans.Omitted)), attrTokens.Int(ans.Tokens))
	}
	return ans, tools, err
}

// traceTransport passes the trace context of a request's ctx on to an
// HTTP server: a request whose ctx holds a valid span context (an
// upstream call's span) goes out with its W3C traceparent and
// tracestate headers, so that the server's spans join the trace. Other
// requests go as they are.
type traceTransport struct{ base http.RoundTripper }

func (t traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context()) // a RoundTripper must not change the request it is given
	traceContext.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.base.RoundTrip(r)
}

// tracedClient is the Hub's HTTP client for url servers, c (nil: one
// like the Hub's own, returned as own, whose idle connections are the
// caller's to close), sending each request's trace context
// (traceTransport).
func tracedClient(c *http.Client) (traced *http.Client, own *http.Transport) {
	if c == nil {
		own = http.DefaultTransport.(*http.Transport).Clone()
		c = &http.Client{Transport: own}
	}
	cc := *c
	rt := cc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	cc.Transport = traceTransport{rt}
	return &cc, own
}
