package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/toolsift/toolsift/gateway"
)

// newMetrics returns the gateway's metrics (for gateway.Options.Telemetry.Metrics;
// users > 0: with user labels) and the
// handler of /metrics: a registry of them and of the Go runtime's and the
// process's metrics.
func newMetrics(log *slog.Logger, users int) (*gateway.Metrics, http.Handler, error) {
	m := gateway.NewMetrics(users)
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, nil, err
		}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), MaxRequestsInFlight: 4, Timeout: 10 * time.Second})
	return m, h, nil
}

// serveMetrics serves metrics at http://addr/metrics, and health (healthHandler)
// at /healthz and /readyz, on a listener of its own, unauthenticated (so
// that the MCP port need not expose them, nor the metrics port the MCP
// endpoint), until the returned stop is called. It fails when addr cannot
// be listened on.
func serveMetrics(log *slog.Logger, addr string, metrics, health http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/healthz", health)
	mux.Handle("/readyz", health)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	ln = gateway.LimitListener(ln, 16, 16) // a scraper or two, and probes
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	if !loopbackOnly(addr) {
		log.Warn("metrics are served without a token and name the config's servers: keep their address private", "addr", addr)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return func() {
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics listener", "error", err)
		}
	}, nil
}
