package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// serveMetrics serves reg's metrics as a program would (promhttp, an
// error of a collector failing the scrape) until t ends; it returns the URL.
func serveMetrics(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// scrape gets url's /metrics text and parses it with the Prometheus text
// parser: each series as "name{label="value",...}" (labels sorted), its
// value (a histogram's _count and _sum as two series).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return series(families)
}

// series flattens parsed metric families (scrape).
func series(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+`"`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[key] = m.GetUntyped().GetValue()
			case m.Histogram != nil:
				c, s := name+"_count", name+"_sum"
				if len(labels) > 0 {
					c += "{" + strings.Join(labels, ",") + "}"
					s += "{" + strings.Join(labels, ",") + "}"
				}
				out[c] = float64(m.GetHistogram().GetSampleCount())
				out[s] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// TestMetricsCountSession: after a scripted session over a real go-sdk
// client (searches, a bad search, calls that succeed, fail, name no tool),
// /metrics, parsed by the Prometheus text parser, has exactly those
// counts: requests by method and outcome, searches and their results,
// calls by server and outcome with their latencies, each server's state
// and tools, the session open and the audit log's counts; and, once the
// client goes, no session open.
func TestMetricsCountSession(t *testing.T) {
	ctx := context.Background()
	m := gateway.NewMetrics(0)
	reg := prometheus.NewPedanticRegistry() // checks each metric against its description
	reg.MustRegister(m)
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Audit:     &audit.Log{Store: store.NewMemory()},
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Telemetry: gateway.Telemetry{Metrics: m},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	metricsURL := serveMetrics(t, reg)

	c := connect(t, gw.NewServer(), "2025-11-25") // initialize, notifications/initialized
	found := len(c.search(t, "add two numbers", 2).Tools) + len(c.search(t, "weather forecast for a city", 3).Tools)
	if found == 0 {
		t.Fatal("the searches found nothing")
	}
	if text, isErr := c.call(t, "search_tools", map[string]any{"query": " "}); !isErr {
		t.Fatalf("an empty query: %s, want an error", text)
	}
	for _, a := range []map[string]any{{"a": 1, "b": 2}, {"a": 3, "b": 4}} {
		if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": a}); isErr {
			t.Fatalf("math__add: %s", text)
		}
	}
	if _, isErr := c.call(t, "call_tool", map[string]any{"name": "math__divide", "arguments": map[string]any{}}); !isErr {
		t.Fatal("math__divide succeeded")
	}
	if _, isErr := c.call(t, "call_tool", map[string]any{"name": "nosuch__tool"}); !isErr {
		t.Fatal("nosuch__tool succeeded")
	}
	if _, err := c.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var rpc error
	_, rpc = c.CallTool(ctx, &mcp.CallToolParams{Name: "nosuch__tool"}) // by name: a JSON-RPC error (the SDK's unknown tool)
	if rpc == nil {
		t.Fatal("nosuch__tool by name: no error")
	}

	got := scrape(t, metricsURL)
	want := map[string]float64{
		`toolsift_requests_total{method="initialize",outcome="ok"}`:                1,
		`toolsift_requests_total{method="notifications/initialized",outcome="ok"}`: 1,
		`toolsift_requests_total{method="tools/list",outcome="ok"}`:                1,
		`toolsift_requests_total{method="tools/call",outcome="ok"}`:                4, // 2 searches, 2 adds
		`toolsift_requests_total{method="tools/call",outcome="tool-error"}`:        3, // the empty query, divide, nosuch
		`toolsift_requests_total{method="tools/call",outcome="error"}`:             1, // nosuch by name
		`toolsift_searches_total{outcome="ok"}`:                                    2,
		`toolsift_searches_total{outcome="invalid"}`:                               1,
		`toolsift_search_duration_seconds_count`:                                   3,
		`toolsift_search_results_count`:                                            2,
		`toolsift_search_results_sum`:                                              float64(found),
		`toolsift_upstream_calls_total{outcome="ok",server="math"}`:                2,
		`toolsift_upstream_calls_total{outcome="tool-error",server="math"}`:        1,
		`toolsift_upstream_calls_total{outcome="unknown",server=""}`:               1,
		`toolsift_upstream_call_duration_seconds_count{server="math"}`:             3,
		`toolsift_upstream_server_tools{server="math"}`:                            3,
		`toolsift_upstream_server_tools{server="notes"}`:                           2,
		`toolsift_upstream_server_tools{server="weather"}`:                         3,
		`toolsift_sessions_open`:                                                   1,
		`toolsift_listen_streams_open`:                                             0,
		`toolsift_audit_queued_records`:                                            0,
		`toolsift_audit_delayed_records_total`:                                     0,
		`toolsift_audit_lost_records_total`:                                        0,
	}
	for _, s := range []string{"math", "notes", "weather"} {
		for _, st := range []string{"connecting", "ready", "restarting", "failed", "disabled", "closed", "lazy"} {
			v := 0.0
			if st == "ready" {
				v = 1
			}
			want[`toolsift_upstream_server_state{server="`+s+`",state="`+st+`"}`] = v
		}
		want[`toolsift_upstream_server_quarantined_tools{server="`+s+`"}`] = 0
		want[`toolsift_upstream_server_restarts_total{server="`+s+`"}`] = 0
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for k := range got { // nothing more: no series of another label value
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "toolsift_search_duration_seconds_sum") &&
			!strings.HasPrefix(k, "toolsift_upstream_call_duration_seconds_sum") &&
			!strings.HasPrefix(k, "toolsift_store_") { // TestStoreMetricsSession counts those
			t.Errorf("unexpected series %s = %v", k, got[k])
		}
	}
	if s := got[`toolsift_upstream_call_duration_seconds_sum{server="math"}`]; s <= 0 {
		t.Errorf("the calls took %v seconds in all, want > 0", s)
	}

	c.Close()
	deadline := time.Now().Add(testenv.WaitLimit())
	for got := scrape(t, metricsURL)[`toolsift_sessions_open`]; got != 0; got = scrape(t, metricsURL)[`toolsift_sessions_open`] {
		if time.Now().After(deadline) {
			t.Fatalf("toolsift_sessions_open = %v after the client closed, want 0", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMetricsAuditAndListen: the audit log's records that its store does
// not take are counted delayed and queued; a 2026-07-28 client's
// subscriptions/listen stream is counted open while it is, and is no
// session.
func TestMetricsAuditAndListen(t *testing.T) {
	ctx := context.Background()
	m := gateway.NewMetrics(0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Audit:     &audit.Log{Store: failingPuts{store.NewMemory()}},
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Telemetry: gateway.Telemetry{Metrics: m},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	metricsURL := serveMetrics(t, reg)

	c := connect(t, gw.NewServer(), "2025-11-25")
	for range 2 {
		if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}); isErr {
			t.Fatalf("math__add: %s", text)
		}
	}
	got := scrape(t, metricsURL)
	for k, v := range map[string]float64{
		"toolsift_audit_delayed_records_total": 2, "toolsift_audit_queued_records": 2, "toolsift_audit_lost_records_total": 0,
		`toolsift_upstream_calls_total{outcome="ok",server="math"}`: 2,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}

	mcpSrv := httptest.NewServer(gw.Handler())
	defer mcpSrv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpSrv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	waitFor := func(name string, want float64) map[string]float64 {
		t.Helper()
		deadline := time.Now().Add(testenv.WaitLimit())
		for {
			got := scrape(t, metricsURL)
			if got[name] == want {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %v, want %v", name, got[name], want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	got = waitFor("toolsift_listen_streams_open", 1)
	if got["toolsift_sessions_open"] != 1 {
		t.Errorf("toolsift_sessions_open = %v with a listen stream open, want 1 (the 2025-11-25 client's)", got["toolsift_sessions_open"])
	}
	if n := got[`toolsift_requests_total{method="server/discover",outcome="ok"}`]; n < 1 {
		t.Errorf("server/discover counted %v times, want at least 1 (the 2026-07-28 client's)", n)
	}
	if n := got[`toolsift_requests_total{method="other",outcome="ok"}`]; n != 0 {
		t.Errorf("%v requests of methods counted as other", n)
	}
	cs.Close()
	waitFor("toolsift_listen_streams_open", 0)
}

// TestMetricsOneGateway: a Metrics another Gateway has is refused.
func TestMetricsOneGateway(t *testing.T) {
	m := gateway.NewMetrics(0)
	o := &gateway.Options{Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}, Telemetry: gateway.Telemetry{Metrics: m}}
	gw, err := gateway.Open(context.Background(), localTools(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	o.Toolset.Store = store.NewMemory()
	gw2, err := gateway.Open(context.Background(), localTools(t), o)
	if !errors.Is(err, gateway.ErrOptions) || !strings.Contains(err.Error(), "Metrics") {
		if gw2 != nil {
			gw2.Close()
		}
		t.Fatalf("second Open with the same Metrics: %v, want ErrOptions naming Metrics", err)
	}
}

// metricsClient is a go-sdk client in memory of a proxy over ts and hub,
// with Metrics when on (registered, as a program would).
func metricsClient(b *testing.B, ts *toolsift.Toolset, hub *upstream.Hub, on bool) *mcp.ClientSession {
	b.Helper()
	po := &gateway.ProxyOptions{}
	if on {
		po.Telemetry.Metrics = gateway.NewMetrics(0)
		prometheus.NewRegistry().MustRegister(po.Telemetry.Metrics)
	}
	return proxyClient(b, ts, hub, po)
}

// proxyClient is a go-sdk client in memory of a proxy over ts and hub
// made with po, both sessions closed when b ends.
func proxyClient(b *testing.B, ts *toolsift.Toolset, hub *upstream.Hub, po *gateway.ProxyOptions) *mcp.ClientSession {
	b.Helper()
	p, err := gateway.NewProxy(ts, hub, po)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := p.NewServer().Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkCallMetrics and BenchmarkSearchMetrics: one call_tool, and one
// search_tools, of a go-sdk client in memory, without Metrics and with
// them: what counting costs a request.
func BenchmarkCallMetrics(b *testing.B) {
	ts, hub := openHubToolset(b, localTools(b), upstream.HubOptions{}, toolsift.Options{NoSemantic: true})
	params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}}
	for _, on := range []bool{false, true} {
		cs := metricsClient(b, ts, hub, on)
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

func BenchmarkSearchMetrics(b *testing.B) {
	ts, hub := openHubToolset(b, localTools(b), upstream.HubOptions{}, toolsift.Options{NoSemantic: true})
	params := &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "weather forecast for a city", "k": 3}}
	for _, on := range []bool{false, true} {
		cs := metricsClient(b, ts, hub, on)
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
