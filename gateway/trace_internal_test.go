package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestTraceTransport: a request whose ctx holds a span context goes out
// with its traceparent, the request it was given left as it was; one
// without goes with none.
func TestTraceTransport(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got <- r.Header.Get("traceparent") }))
	defer srv.Close()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled})
	c, own := tracedClient(nil)
	defer own.CloseIdleConnections()
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{trace.ContextWithSpanContext(context.Background(), sc), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{context.Background(), ""},
	} {
		req, _ := http.NewRequestWithContext(tc.ctx, http.MethodPost, srv.URL, nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if g := <-got; g != tc.want {
			t.Errorf("traceparent %q, want %q", g, tc.want)
		}
		if h := req.Header.Get("traceparent"); h != "" {
			t.Errorf("the caller's request was changed: traceparent %q", h)
		}
	}
	base := &http.Client{Transport: http.DefaultTransport}
	if c, own := tracedClient(base); own != nil || base.Transport != http.DefaultTransport || c == base {
		t.Errorf("tracedClient(a client): own %v, and the caller's client changed (%v)", own, base.Transport)
	}
}
