package main

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/internal/testenv"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestTracingEnv: traces are off unless the OTEL_* variables ask for
// them; an exporter or protocol serve does not speak is an error naming
// the variable.
func TestTracingEnv(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, wantErr: `OTEL_TRACES_EXPORTER="jaeger"`},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
			wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="thrift"`},
	} {
		tp, stop, err := newTracing(context.Background(), func(k string) string { return c.env[k] }, log)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: error %v, want one naming %s", c.env, err, c.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", c.env, err)
		case (tp != nil) != c.on:
			t.Errorf("%v: traces on %v, want %v", c.env, tp != nil, c.on)
		}
		if stop != nil {
			stop(context.Background())
		}
	}
}

// otlpSpans is an OTLP/HTTP trace receiver keeping the spans it is sent.
type otlpSpans struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	names []string // the resources' service.name
}

func (o *otlpSpans) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.names = append(o.names, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

type withTraceparent struct{ value string }

func (h withTraceparent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("traceparent", h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeTraces: toolsift serve with OTEL_EXPORTER_OTLP_ENDPOINT set
// exports, by the time it has shut down, the spans of one search then
// call of a client that sent its traceparent: the requests' spans in the
// client's trace, its children, the search's and the upstream call's
// spans theirs, the call's audit record's store.put the call's; and the
// HTTP upstream is sent the call span's trace context.
func TestServeTraces(t *testing.T) {
	recv := &otlpSpans{}
	col := httptest.NewServer(recv)
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_SERVICE_NAME", "gateway-under-test")

	var mu sync.Mutex
	var upHeaders []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "Weather forecast for a city."},
		func(context.Context, *mcp.CallToolRequest, struct {
			City string `json:"city"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, nil, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("traceparent"); v != "" {
			mu.Lock()
			upHeaders = append(upHeaders, v)
			mu.Unlock()
		}
		sdk.ServeHTTP(w, r)
	}))
	defer up.Close()
	config := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {"up": {"type": "http", "url": "`+up.URL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log testenv.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &log, stderr: &log, getenv: os.Getenv}
	addr, done := startServe(ctx, t, e, &log, "serve", "--config", config, "--store", t.TempDir(), "--audit", "--listen", "127.0.0.1:0")
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: withTraceparent{"00-" + trace + "-" + parent + "-01"}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*mcp.CallToolParams{
		{Name: "search_tools", Arguments: map[string]any{"query": "weather forecast", "k": 2}},
		{Name: "call_tool", Arguments: map[string]any{"name": "up__forecast", "arguments": map[string]any{"city": "Turin"}}},
	} {
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v\n%s", p.Name, err, res, log.String())
		}
	}
	cs.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited with %d:\n%s", code, log.String())
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	for _, s := range recv.spans {
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	var search, call *tracepb.Span
	var requests int
	for _, s := range recv.spans {
		switch s.Name {
		case "tools/call":
			requests++
			if hex.EncodeToString(s.TraceId) != trace || hex.EncodeToString(s.ParentSpanId) != parent || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("tools/call span: trace %x, parent %x, kind %v; want %s, %s, server", s.TraceId, s.ParentSpanId, s.Kind, trace, parent)
			}
		case "search_tools":
			search = s
		case "call up__forecast":
			call = s
		}
	}
	if requests != 2 || search == nil || call == nil {
		t.Fatalf("spans exported: %d tools/call, search_tools %v, call up__forecast %v; want 2 and both\n%s", requests, search != nil, call != nil, log.String())
	}
	for _, s := range []*tracepb.Span{search, call} {
		if p := byID[hex.EncodeToString(s.ParentSpanId)]; p == nil || p.Name != "tools/call" || hex.EncodeToString(s.TraceId) != trace {
			t.Errorf("span %s: trace %x, parent %x (%v); want the client's trace, a tools/call span's child", s.Name, s.TraceId, s.ParentSpanId, p)
		}
	}
	// The store is traced: the call's audit record is written under the
	// call's span (--audit, on the instrumented --store).
	var auditPut *tracepb.Span
	for _, s := range recv.spans {
		if s.Name != "store.put" {
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == "toolsift.store.kind" && a.GetValue().GetStringValue() == "audit" {
				auditPut = s
			}
		}
	}
	if auditPut == nil || !slices.Equal(auditPut.ParentSpanId, call.SpanId) || auditPut.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("the audit record's store.put span %v: want a client span, the child of call up__forecast's %x", auditPut, call.SpanId)
	}
	if !slices.Contains(recv.names, "gateway-under-test") {
		t.Errorf("service.name %v, want OTEL_SERVICE_NAME's gateway-under-test", recv.names)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "00-" + trace + "-" + hex.EncodeToString(call.SpanId) + "-01"; !slices.Contains(upHeaders, want) {
		t.Errorf("the HTTP upstream was sent traceparent %q, want %q among them", upHeaders, want)
	}
}
