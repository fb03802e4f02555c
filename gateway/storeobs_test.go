package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/store/storetest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// instrumented is InstrumentStore over s with metrics and spans (to an
// exporter nobody reads).
func instrumented(t *testing.T, s store.Store) store.Store {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return gateway.InstrumentStore(s, gateway.NewMetrics(0), tp)
}

// TestInstrumentedStoreContract: the instrumented store keeps the Store
// contract over memory and folder stores, and the shared and Watcher
// contracts over PostgreSQL; it is a store.Watcher exactly when the
// store it wraps is one, and InstrumentStore without metrics or tracer
// is the store itself.
func TestInstrumentedStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return instrumented(t, store.NewMemory()) })
	})
	t.Run("dir", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			d, err := store.NewDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return instrumented(t, d)
		})
	})
	two := func(t *testing.T) (store.Store, store.Store) {
		url := pgtest.Start(t)
		open := func() store.Store {
			s, err := postgres.Open(context.Background(), url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return instrumented(t, s)
		}
		return open(), open()
	}
	t.Run("postgres", func(t *testing.T) {
		storetest.RunShared(t, two)
		storetest.RunWatcher(t, two)
	})

	mem := store.NewMemory()
	if s := gateway.InstrumentStore(mem, nil, nil); s != store.Store(mem) {
		t.Errorf("InstrumentStore(mem, nil, nil) = %T, want the store itself", s)
	}
	s := instrumented(t, mem)
	if _, ok := s.(store.Watcher); ok {
		t.Error("an instrumented memory store is a store.Watcher")
	}
	if _, ok := s.(store.RateLimiter); ok {
		t.Error("an instrumented memory store is a store.RateLimiter")
	}
	if _, ok := s.(store.BoundedGetter); !ok {
		t.Error("an instrumented store is not a store.BoundedGetter")
	}
	if _, ok := s.(store.PrefixDeleter); !ok {
		t.Error("an instrumented store is not a store.PrefixDeleter")
	}
	if again := gateway.InstrumentStore(s, gateway.NewMetrics(0), nil); again != s {
		t.Error("InstrumentStore of an instrumented store wrapped it again")
	}
	pg, err := postgres.Open(context.Background(), pgtest.Start(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	ipg := instrumented(t, pg)
	if _, ok := ipg.(store.Watcher); !ok {
		t.Error("an instrumented PostgreSQL store is not a store.Watcher")
	}
	rl, ok := ipg.(store.RateLimiter)
	if !ok {
		t.Fatal("an instrumented PostgreSQL store is not a store.RateLimiter")
	}
	for i, want := range []bool{true, true, false} { // a bucket of 2, an hour per token
		retry, err := rl.TakeToken(context.Background(), "test/instrumented", 1, time.Hour, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := retry == 0; got != want {
			t.Errorf("take %d through the instrumented store: took %v (retry %v), want %v", i+1, got, retry, want)
		}
	}
}

// failingUnder is a store whose writes of keys under prefix fail.
type failingUnder struct {
	store.Store
	prefix string
}

func (f failingUnder) Put(ctx context.Context, key string, value []byte) error {
	if strings.HasPrefix(key, f.prefix) {
		return errors.New("disk full")
	}
	return f.Store.Put(ctx, key, value)
}

// TestStoreMetricsCount: a script of store operations is counted exactly
// by op and outcome (a missing key not_found, a failed write error), each
// timed, and no label holds more of a key than its first segment.
func TestStoreMetricsCount(t *testing.T) {
	ctx := context.Background()
	m := gateway.NewMetrics(0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	metricsURL := serveMetrics(t, reg)
	s := gateway.InstrumentStore(failingUnder{store.NewMemory(), "broken/"}, m, nil)

	if _, err := s.Get(ctx, "users/alice.json"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	for _, k := range []string{"users/alice.json", "users/bob.json"} {
		if err := s.Put(ctx, k, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "broken/carol.json", []byte("{}")); err == nil {
		t.Fatal("a write under broken/ succeeded")
	}
	if v, err := s.Get(ctx, "users/alice.json"); err != nil || string(v) != "{}" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := store.GetBounded(ctx, s, "users/bob.json", 1); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("GetBounded over the limit: %v", err)
	}
	if keys, err := s.List(ctx, "users/"); err != nil || len(keys) != 2 {
		t.Fatalf("List = %v, %v", keys, err)
	}
	unlock, err := s.Lock(ctx, "users/alice.json")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := s.Delete(ctx, "users/alice.json"); err != nil {
		t.Fatal(err)
	}
	if n, err := store.DeletePrefix(ctx, s, "users/"); err != nil || n != 1 {
		t.Fatalf("DeletePrefix = %d, %v", n, err)
	}

	got := scrape(t, metricsURL)
	want := map[string]float64{
		`toolsift_store_operations_total{op="get",outcome="not_found"}`:       1,
		`toolsift_store_operations_total{op="get",outcome="ok"}`:              1,
		`toolsift_store_operations_total{op="get",outcome="error"}`:           1, // over the limit
		`toolsift_store_operations_total{op="put",outcome="ok"}`:              2,
		`toolsift_store_operations_total{op="put",outcome="error"}`:           1,
		`toolsift_store_operations_total{op="list",outcome="ok"}`:             1,
		`toolsift_store_operations_total{op="lock",outcome="ok"}`:             1,
		`toolsift_store_operations_total{op="delete",outcome="ok"}`:           1,
		`toolsift_store_operations_total{op="delete_prefix",outcome="ok"}`:    1,
		`toolsift_store_operation_duration_seconds_count{op="get"}`:           3,
		`toolsift_store_operation_duration_seconds_count{op="put"}`:           3,
		`toolsift_store_operation_duration_seconds_count{op="list"}`:          1,
		`toolsift_store_operation_duration_seconds_count{op="lock"}`:          1,
		`toolsift_store_operation_duration_seconds_count{op="delete"}`:        1,
		`toolsift_store_operation_duration_seconds_count{op="delete_prefix"}`: 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if strings.HasPrefix(k, "toolsift_store_operations_total") {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected series %s = %v", k, got[k])
			}
		}
		if strings.Contains(k, "alice") || strings.Contains(k, "users") {
			t.Errorf("series %s names a key", k)
		}
	}
}

// TestStoreMetricsSession: through a Gateway with Metrics, a scripted
// session's store operations (the Toolset's tool lists and caches, the
// audit log's records on an instrumented store whose writes fail) are
// counted, the failed writes as errors.
func TestStoreMetricsSession(t *testing.T) {
	ctx := context.Background()
	m := gateway.NewMetrics(0)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	st := gateway.InstrumentStore(failingUnder{store.NewMemory(), "audit/"}, m, nil)
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Audit:     &audit.Log{Store: st},
		Toolset:   toolsift.Options{NoSemantic: true, Store: st},
		Telemetry: gateway.Telemetry{Metrics: m},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	metricsURL := serveMetrics(t, reg)

	c := connect(t, gw.NewServer(), "2025-11-25")
	if len(c.search(t, "add two numbers", 2).Tools) == 0 {
		t.Fatal("the search found nothing")
	}
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}); isErr {
		t.Fatalf("math__add: %s", text)
	}
	got := scrape(t, metricsURL)
	if n := got[`toolsift_store_operations_total{op="put",outcome="ok"}`]; n < 1 {
		t.Errorf("store puts ok = %v, want at least 1 (the tool lists)", n)
	}
	if n := got[`toolsift_store_operations_total{op="put",outcome="error"}`]; n < 1 {
		t.Errorf("store puts failed = %v, want at least 1 (the call's audit record)", n)
	}
	if got["toolsift_audit_delayed_records_total"] != 1 {
		t.Errorf("toolsift_audit_delayed_records_total = %v, want 1", got["toolsift_audit_delayed_records_total"])
	}
}

// TestTraceStoreOps: the store operations a call makes (its audit
// record's write) are spans under the call's span, in the client's trace,
// named by the op, with the key's first segment and the outcome only;
// an operation outside any request starts no span.
func TestTraceStoreOps(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	defer tp.Shutdown(context.Background())
	st := gateway.InstrumentStore(store.NewMemory(), nil, tp)
	gw, err := gateway.Open(context.Background(), localTools(t), &gateway.Options{
		Audit:     &audit.Log{Store: st},
		Toolset:   toolsift.Options{NoSemantic: true, Store: st},
		Telemetry: gateway.Telemetry{Tracer: tp},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	web := httptest.NewServer(asUser(gw.Handler()))
	t.Cleanup(web.Close) // after the client's cleanup
	before := len(mem.GetSpans())
	if before != 0 {
		t.Errorf("%d spans before any request (%v): store operations outside a request are not traced", before, names(mem.GetSpans()))
	}
	c := tracingClient(t, web.URL, "00-"+clientTrace+"-"+clientSpan+"-01")
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}); isErr {
		t.Fatalf("math__add: %s", text)
	}
	spans := mem.GetSpans()
	var call *tracetest.SpanStub
	for i, s := range spans {
		if s.Name == "call math__add" {
			call = &spans[i]
		}
	}
	if call == nil {
		t.Fatalf("no call span; spans: %v", names(spans))
	}
	var puts int
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "store.") {
			continue
		}
		a := attrs(s.Attributes)
		for k, v := range a {
			if strings.Contains(v, "/") || strings.Contains(v, "alice") {
				t.Errorf("span %s: attribute %s = %q: more than a key's first segment", s.Name, k, v)
			}
		}
		if s.SpanContext.TraceID().String() != clientTrace || s.SpanKind != trace.SpanKindClient {
			t.Errorf("span %s: trace %s, kind %v; want the client's trace, client", s.Name, s.SpanContext.TraceID(), s.SpanKind)
		}
		if s.Name == "store.put" && a["toolsift.store.kind"] == "audit" {
			puts++
			if s.Parent.SpanID() != call.SpanContext.SpanID() || a["toolsift.store.op"] != "put" || a["toolsift.outcome"] != "ok" {
				t.Errorf("the audit record's store.put: parent %s (want the call's %s), attributes %v", s.Parent.SpanID(), call.SpanContext.SpanID(), a)
			}
		}
	}
	if puts != 1 {
		t.Errorf("%d store.put spans of the audit record, want 1; spans: %v", puts, names(spans))
	}
}

// TestMetricsUserLabels: with NewMetrics(2), the request and
// call counters name the first two users and count the third as other;
// the other metrics name no user.
func TestMetricsUserLabels(t *testing.T) {
	m := gateway.NewMetrics(2)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	gw, err := gateway.Open(context.Background(), localTools(t), &gateway.Options{
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Telemetry: gateway.Telemetry{Metrics: m},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	web := httptest.NewServer(asUser(gw.Handler()))
	t.Cleanup(web.Close)
	metricsURL := serveMetrics(t, reg)
	for _, u := range []string{"alice", "bob", "carol", "alice"} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: web.URL, HTTPClient: &http.Client{Transport: userHeader{u, http.DefaultTransport}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool",
			Arguments: map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}})
		cs.Close()
		if err != nil || res.IsError {
			t.Fatalf("%s: call_tool(math__add) = %v, %v", u, res, err)
		}
	}
	got := scrape(t, metricsURL)
	for k, v := range map[string]float64{
		`toolsift_requests_total{method="tools/call",outcome="ok",user="alice"}`: 2,
		`toolsift_requests_total{method="tools/call",outcome="ok",user="bob"}`:   1,
		`toolsift_requests_total{method="tools/call",outcome="ok",user="other"}`: 1,
		`toolsift_upstream_calls_total{outcome="ok",server="math",user="alice"}`: 2,
		`toolsift_upstream_calls_total{outcome="ok",server="math",user="bob"}`:   1,
		`toolsift_upstream_calls_total{outcome="ok",server="math",user="other"}`: 1,
		`toolsift_upstream_call_duration_seconds_count{server="math"}`:           4,
		`toolsift_requests_total{method="initialize",outcome="ok",user="other"}`: 1,
		`toolsift_requests_total{method="initialize",outcome="ok",user="alice"}`: 2,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if strings.Contains(k, "carol") {
			t.Errorf("series %s names the third user", k)
		}
		if strings.Contains(k, "user=") && !strings.HasPrefix(k, "toolsift_requests_total") && !strings.HasPrefix(k, "toolsift_upstream_calls_total") {
			t.Errorf("series %s has a user label", k)
		}
	}
}

// BenchmarkInstrumentedStore: what instrumenting a store costs per
// operation (a Get and a Put of a memory store): off (the store itself),
// with metrics, with metrics and a tracer outside a trace (no span), and
// with both within a request's trace (a span each, batched to an exporter
// that drops them).
func BenchmarkInstrumentedStore(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	defer tp.Shutdown(context.Background())
	traced, span := tp.Tracer("bench").Start(context.Background(), "request")
	defer span.End()
	for _, c := range []struct {
		name string
		s    func() store.Store
		ctx  context.Context
	}{
		{"off", func() store.Store { return store.NewMemory() }, context.Background()},
		{"metrics", func() store.Store { return gateway.InstrumentStore(store.NewMemory(), gateway.NewMetrics(0), nil) }, context.Background()},
		{"both-untraced", func() store.Store { return gateway.InstrumentStore(store.NewMemory(), gateway.NewMetrics(0), tp) }, context.Background()},
		{"both-traced", func() store.Store { return gateway.InstrumentStore(store.NewMemory(), gateway.NewMetrics(0), tp) }, traced},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := c.s()
			value := []byte(`{"tools":[]}`)
			if err := s.Put(c.ctx, "catalog/bench.json", value); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Get(c.ctx, "catalog/bench.json"); err != nil {
					b.Fatal(err)
				}
				if err := s.Put(c.ctx, "catalog/bench.json", value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
