package gateway_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The client's span, as its traceparent names it.
const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
)

// traceHeader sends a traceparent header with every request.
type traceHeader struct {
	value string
	next  http.RoundTripper
}

func (h traceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", h.value)
	return h.next.RoundTrip(r)
}

// headers keeps the traceparent headers an HTTP server was sent.
type headers struct {
	mu   sync.Mutex
	seen []string
}

func (h *headers) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("traceparent"); v != "" {
			h.mu.Lock()
			h.seen = append(h.seen, v)
			h.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func (h *headers) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each export
// request's protobuf and keeps its spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

// tracedGateway serves localTools and an HTTP upstream "up" (its tool
// forecast; the traceparent headers it is sent kept in up) through a
// Gateway traced by tp, behind asUser; it returns the Gateway's URL.
func tracedGateway(t *testing.T, tp trace.TracerProvider, traceUser bool, up *headers) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "Weather forecast for a city."},
		func(context.Context, *mcp.CallToolRequest, struct {
			City string `json:"city"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil, nil
		})
	hs := httptest.NewServer(up.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(hs.Close)
	cfg := localTools(t)
	cfg.Servers["up"] = config.Server{URL: hs.URL, Type: "http"}
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Telemetry: gateway.Telemetry{Tracer: tp, TraceUser: traceUser},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	web := httptest.NewServer(asUser(gw.Handler()))
	t.Cleanup(web.Close)
	return web.URL
}

// tracingClient is a go-sdk client of url over HTTP as user alice, sending
// the traceparent header tp ("": none).
func tracingClient(t *testing.T, url, tp string) *client {
	t.Helper()
	var rt http.RoundTripper = userHeader{"alice", http.DefaultTransport}
	if tp != "" {
		rt = traceHeader{tp, rt}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &client{ClientSession: cs, changed: make(chan struct{}, 16)}
}

func attrs(kv []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// TestTraceSearchThenCall: a search then a call over HTTP, the client
// sending its traceparent: each request's span is the client's span's
// child, the search's and the upstream call's spans the children of
// their request's, with the names, counts and outcomes and no query or
// user; the HTTP upstream is sent the call span's trace context; and an
// OTLP/HTTP exporter delivers the same tree to an OTLP receiver.
func TestTraceSearchThenCall(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	recv := &otlpReceiver{}
	col := httptest.NewServer(recv)
	defer col.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(col.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem), sdktrace.WithBatcher(exp))
	defer tp.Shutdown(context.Background())
	up := &headers{}
	c := tracingClient(t, tracedGateway(t, tp, false, up), "00-"+clientTrace+"-"+clientSpan+"-01")

	const query = "weather forecast for a city"
	ans := c.search(t, query, 3)
	if !slices.ContainsFunc(ans.Tools, func(f think.FoundTool) bool { return f.Name == "up__forecast" }) {
		t.Fatalf("search found %v, want up__forecast", ans.Tools)
	}
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "up__forecast", "arguments": map[string]any{"city": "Turin"}}); isErr || text != "sunny" {
		t.Fatalf("call_tool(up__forecast) = %q (isError %v)", text, isErr)
	}
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := mem.GetSpans()
	var requests []tracetest.SpanStub
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		for k, v := range attrs(s.Attributes) {
			if strings.Contains(v, query) || strings.Contains(v, "Turin") || strings.Contains(v, "alice") || k == "enduser.id" {
				t.Errorf("span %s: attribute %s = %q: a request's text or its user", s.Name, k, v)
			}
		}
		if s.Name == "tools/call" {
			requests = append(requests, s)
		} else {
			byName[s.Name] = s
		}
	}
	if len(requests) != 2 {
		t.Fatalf("%d tools/call spans, want 2 (the search, the call); spans: %v", len(requests), names(spans))
	}
	for _, r := range requests {
		if r.SpanContext.TraceID().String() != clientTrace || r.Parent.SpanID().String() != clientSpan || !r.Parent.IsRemote() || r.SpanKind != trace.SpanKindServer {
			t.Errorf("%s span: trace %s, parent %s (remote %v), kind %v; want the client's trace %s, parent %s, remote, server",
				r.Name, r.SpanContext.TraceID(), r.Parent.SpanID(), r.Parent.IsRemote(), r.SpanKind, clientTrace, clientSpan)
		}
	}
	search, call := requests[0], requests[1]
	if attrs(search.Attributes)["gen_ai.tool.name"] != "search_tools" {
		search, call = call, search
	}
	if a := attrs(search.Attributes); a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "search_tools" || a["toolsift.outcome"] != "ok" {
		t.Errorf("the search's request span: %v", a)
	}
	if a := attrs(call.Attributes); a["gen_ai.tool.name"] != "call_tool" || a["toolsift.outcome"] != "ok" {
		t.Errorf("the call's request span: %v", a)
	}
	s, ok := byName["search_tools"]
	if !ok {
		t.Fatalf("no search_tools span; spans: %v", names(spans))
	}
	if a := attrs(s.Attributes); s.Parent.SpanID() != search.SpanContext.SpanID() || a["toolsift.outcome"] != "ok" ||
		a["toolsift.search.results"] != strconv.Itoa(len(ans.Tools)) || a["toolsift.search.tokens"] != strconv.Itoa(ans.Tokens) || a["toolsift.search.k"] != "3" {
		t.Errorf("search_tools span: parent %s (want %s), attributes %v; the answer: %d tools, %d tokens", s.Parent.SpanID(), search.SpanContext.SpanID(), a, len(ans.Tools), ans.Tokens)
	}
	u, ok := byName["call up__forecast"]
	if !ok {
		t.Fatalf("no upstream call span; spans: %v", names(spans))
	}
	if a := attrs(u.Attributes); u.Parent.SpanID() != call.SpanContext.SpanID() || u.SpanKind != trace.SpanKindClient ||
		a["toolsift.server"] != "up" || a["toolsift.upstream_tool"] != "forecast" || a["gen_ai.tool.name"] != "up__forecast" || a["toolsift.outcome"] != "ok" {
		t.Errorf("upstream call span: parent %s (want %s), kind %v, attributes %v", u.Parent.SpanID(), call.SpanContext.SpanID(), u.SpanKind, a)
	}
	if !u.EndTime.After(u.StartTime) {
		t.Errorf("upstream call span: start %v, end %v", u.StartTime, u.EndTime)
	}
	want := "00-" + clientTrace + "-" + u.SpanContext.SpanID().String() + "-01"
	if !slices.Contains(up.all(), want) {
		t.Errorf("the HTTP upstream was sent traceparent %q, want %q among them", up.all(), want)
	}

	// The same tree, through OTLP/HTTP.
	got := map[string]*tracepb.Span{}
	recv.mu.Lock()
	for _, s := range recv.spans {
		got[hex.EncodeToString(s.SpanId)] = s
	}
	recv.mu.Unlock()
	for _, s := range []tracetest.SpanStub{search, call, byName["search_tools"], u} {
		o, ok := got[s.SpanContext.SpanID().String()]
		switch {
		case !ok:
			t.Errorf("OTLP receiver: no span %s %s", s.Name, s.SpanContext.SpanID())
		case o.Name != s.Name || hex.EncodeToString(o.TraceId) != clientTrace || hex.EncodeToString(o.ParentSpanId) != s.Parent.SpanID().String():
			t.Errorf("OTLP receiver: span %s, trace %x, parent %x; want %s, %s, %s", o.Name, o.TraceId, o.ParentSpanId, s.Name, clientTrace, s.Parent.SpanID())
		}
	}
}

// TestTraceMeta: a traceparent in a request's params._meta is its span's
// parent, before the HTTP header's; with TraceUser the span names the
// caller's user.
func TestTraceMeta(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	defer tp.Shutdown(context.Background())
	c := tracingClient(t, tracedGateway(t, tp, true, &headers{}), "00-"+clientTrace+"-"+clientSpan+"-01")
	const metaTrace, metaSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool",
		Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}},
		Meta:      mcp.Meta{"traceparent": "00-" + metaTrace + "-" + metaSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	var r *tracetest.SpanStub
	for _, s := range mem.GetSpans() {
		if s.Name == "tools/call" {
			r = &s
		}
	}
	if r == nil {
		t.Fatalf("no tools/call span; spans: %v", names(mem.GetSpans()))
	}
	if r.SpanContext.TraceID().String() != metaTrace || r.Parent.SpanID().String() != metaSpan {
		t.Errorf("tools/call span: trace %s, parent %s; want _meta's %s, %s", r.SpanContext.TraceID(), r.Parent.SpanID(), metaTrace, metaSpan)
	}
	if u := attrs(r.Attributes)["enduser.id"]; u != "alice" {
		t.Errorf("enduser.id = %q with TraceUser, want alice", u)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

// tracingBenchClient is a go-sdk client in memory of a proxy over ts and hub,
// traced by an SDK tracer provider whose exporter drops every span when
// on (what tracing costs a request, not what exporting it does).
func tracingBenchClient(b *testing.B, ts *toolsift.Toolset, hub *upstream.Hub, on bool) *mcp.ClientSession {
	b.Helper()
	po := &gateway.ProxyOptions{}
	if on {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
		b.Cleanup(func() { tp.Shutdown(context.Background()) })
		po.Telemetry.Tracer = tp
	}
	return proxyClient(b, ts, hub, po)
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkCallTracing and BenchmarkSearchTracing: one call_tool, and
// one search_tools, of a go-sdk client in memory, without a Tracer and
// with the SDK's (every span sampled, batched, dropped).
func BenchmarkCallTracing(b *testing.B) {
	ts, hub := openHubToolset(b, localTools(b), upstream.HubOptions{}, toolsift.Options{NoSemantic: true})
	benchTracing(b, ts, hub, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}})
}

func BenchmarkSearchTracing(b *testing.B) {
	ts, hub := openHubToolset(b, localTools(b), upstream.HubOptions{}, toolsift.Options{NoSemantic: true})
	benchTracing(b, ts, hub, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "weather forecast for a city", "k": 3}})
}

func benchTracing(b *testing.B, ts *toolsift.Toolset, hub *upstream.Hub, params *mcp.CallToolParams) {
	for _, on := range []bool{false, true} {
		cs := tracingBenchClient(b, ts, hub, on)
		b.Run(map[bool]string{false: "off", true: "on"}[on], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
