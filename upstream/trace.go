package upstream

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceTransport passes the trace context of a request's ctx on to an
// HTTP server: a request whose ctx holds a valid span context (a span of
// the caller's, such as a gateway's call span) goes out with its W3C
// traceparent and tracestate headers, so that the server's spans join
// the caller's trace. Other requests go as they are.
type traceTransport struct{ base http.RoundTripper }

func (t traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(req.Context()).IsValid() {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context()) // a RoundTripper must not change the request it is given
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.base.RoundTrip(r)
}
