package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/toolsift/toolsift/cmd/internal/cli"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newTracing returns the tracer provider of serve's traces as the
// standard OTEL_* variables of getenv configure them (docs/serve.md,
// "Traces"), and its shutdown, which flushes the spans not yet
// exported; a nil provider when they configure none. Traces are on when
// OTEL_TRACES_EXPORTER is otlp, or is unset and an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set; none turns them off. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default) or grpc. The exporters read the rest of
// their variables themselves (endpoint, headers, timeout, TLS), the
// batch span processor its OTEL_BSP_*, the provider OTEL_TRACES_SAMPLER,
// the resource OTEL_SERVICE_NAME (default toolsift) and
// OTEL_RESOURCE_ATTRIBUTES. Export errors are logged as warnings.
func newTracing(ctx context.Context, getenv func(string) string, log *slog.Logger) (*sdktrace.TracerProvider, func(context.Context) error, error) {
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch exporter {
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil, nil
		}
	case "none":
		return nil, nil, nil
	case "otlp":
	default:
		return nil, nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: toolsift serve exports traces with otlp (or none)", exporter)
	}
	protocol, from := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if protocol == "" {
		protocol, from = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	var exp sdktrace.SpanExporter
	var err error
	switch strings.TrimSpace(protocol) {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, nil, fmt.Errorf("%s=%q: want http/protobuf or grpc", from, protocol)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", "toolsift"), attribute.String("service.version", cli.Version())),
		resource.WithFromEnv()) // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	if err != nil {
		log.Warn("trace resource", "error", err) // a partial resource is still one
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("traces", "error", err) }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
