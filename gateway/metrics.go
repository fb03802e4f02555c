package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/retrieval"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/upstream"
)

// Metrics are a Gateway's Prometheus metrics (Options.Telemetry.Metrics): a
// prometheus.Collector to register with a prometheus.Registerer (toolsift
// serve --metrics serves its own registry at /metrics). Its counters and
// histograms count what the Gateway does from Open on; its gauges (the
// servers' states and tools, the quarantined tools, the audit queue, the
// sessions and listen streams open) are read at each scrape. Until its
// Gateway is open it collects the counters alone, all zero. docs/serve.md,
// "Metrics", lists them. Labels hold MCP methods, outcomes, store
// operations and the config's server names only: never tools' arguments
// or request text, and users only with NewMetrics(maxUsers > 0).
//
// One Metrics serves one Gateway: Open fails with ErrOptions when it is
// given a Metrics another Gateway has. To register the metrics of several
// Gateways with one registry, wrap each's Registerer with a label of
// your own (prometheus.WrapRegistererWith). It is safe for concurrent use.
type Metrics struct {
	requests    *prometheus.CounterVec   // method, outcome
	searches    *prometheus.CounterVec   // outcome
	searchTime  prometheus.Histogram     // seconds
	searchFound prometheus.Histogram     // tools
	calls       *prometheus.CounterVec   // server, outcome
	callTime    *prometheus.HistogramVec // server; seconds
	limited     *prometheus.CounterVec   // kind, limit
	fallbacks   *prometheus.CounterVec   // kind, limit
	storeOps    *prometheus.CounterVec   // op, outcome
	storeTime   *prometheus.HistogramVec // op; seconds

	// users bounds the user label (NewMetrics with maxUsers > 0); nil: none.
	users *userLabels

	mu sync.Mutex
	p  *proxy // the Gateway's, once open
}

// The scrape-time metrics (Metrics.Collect).
var (
	descServerState = prometheus.NewDesc("toolsift_upstream_server_state",
		"1 for the state each configured upstream server is in (connecting, ready, restarting, failed, disabled, closed, lazy), 0 for the others.",
		[]string{"server", "state"}, nil)
	descServerTools = prometheus.NewDesc("toolsift_upstream_server_tools",
		"Tools each upstream server exposes (after allowedTools and disabledTools).", []string{"server"}, nil)
	descServerQuarantined = prometheus.NewDesc("toolsift_upstream_server_quarantined_tools",
		"Tools of each upstream server that changed since first seen and are quarantined until trusted (toolbench trust).", []string{"server"}, nil)
	descServerRestarts = prometheus.NewDesc("toolsift_upstream_server_restarts_total",
		"Reconnections of each upstream server after its first.", []string{"server"}, nil)
	descSessions = prometheus.NewDesc("toolsift_sessions_open",
		"Client sessions open (stdio, and streamable HTTP sessions of MCP 2025-11-25 and before).", nil, nil)
	descListens = prometheus.NewDesc("toolsift_listen_streams_open",
		"subscriptions/listen streams open (clients of MCP 2026-07-28).", nil, nil)
	descAuditQueued = prometheus.NewDesc("toolsift_audit_queued_records",
		"Audit records waiting in memory for the store.", nil, nil)
	descAuditDelayed = prometheus.NewDesc("toolsift_audit_delayed_records_total",
		"Audit records not written before their call's result returned (the store failed or was slow); each is written once the store takes records again.", nil, nil)
	descAuditLost = prometheus.NewDesc("toolsift_audit_lost_records_total",
		"Audit records never written (the memory queue was full, or the record could not be made).", nil, nil)
)

// serverStates are the states toolsift_upstream_server_state has a
// series for, each server's current one 1.
var serverStates = []upstream.State{upstream.StateConnecting, upstream.StateReady, upstream.StateRestarting,
	upstream.StateFailed, upstream.StateDisabled, upstream.StateClosed, upstream.StateLazy}

// NewMetrics returns the metrics of a Gateway to be opened with them
// (Options.Telemetry.Metrics). The latency histograms' buckets are
// prometheus.DefBuckets (5 ms to 10 s), the store operations' 0.5 ms to
// 5 s. With maxUsers > 0, toolsift_requests_total and
// toolsift_upstream_calls_total have a user label too: the caller's user
// (its authn.Identity; "" for a caller without one) for the first
// maxUsers distinct users seen, "other" for every user after them, so
// that the series stay bounded (at most maxUsers+2 users per method and
// outcome, per server and outcome). Each user is one more series of each:
// give maxUsers the number of users you expect, no more. maxUsers 0 (or
// less) means no user label.
func NewMetrics(maxUsers int) *Metrics { return newMetrics(maxUsers) }

func newMetrics(maxUsers int) *Metrics {
	reqLabels, callLabels := []string{"method", "outcome"}, []string{"server", "outcome"}
	var users *userLabels
	if maxUsers > 0 {
		reqLabels, callLabels = append(reqLabels, "user"), append(callLabels, "user")
		users = &userLabels{max: maxUsers, seen: map[string]bool{}}
	}
	return &Metrics{
		users: users,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_requests_total",
			Help: "MCP requests and notifications from clients, by method and outcome (ok; error: a JSON-RPC error; tool-error: a tools/call result with isError)."},
			reqLabels),
		searches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_searches_total",
			Help: "search_tools calls, by outcome (ok; invalid: a bad query or k; rate-limited; error)."}, []string{"outcome"}),
		searchTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "toolsift_search_duration_seconds",
			Help: "How long search_tools took to find and fit its tools (every outcome)."}),
		searchFound: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "toolsift_search_results",
			Help: "Tools in each search_tools answer that succeeded.", Buckets: []float64{0, 1, 2, 3, 5, 8, 10, 15, 20, 30, 50}}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_upstream_calls_total",
			Help: "Tool calls (listed, through call_tool or by name), by upstream server and outcome (the audit record's: ok, tool-error, error, cancelled, unavailable, unknown, invalid-arguments, out-of-scope, disabled, quarantined, revoked, login-needed, rate-limited); server is empty for a tool no server has."},
			callLabels),
		callTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolsift_upstream_call_duration_seconds",
			Help: "How long the tool calls that reached their upstream server took (outcomes ok, tool-error, error, cancelled), by server."},
			[]string{"server"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_rate_limited_total",
			Help: "Requests a rate limit of the policy refused, by kind (call or search) and limit (its name, or \"rule N limit M\")."},
			[]string{"kind", "limit"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_rate_limit_fallbacks_total",
			Help: "Requests a rate limit counted in this replica's own bucket because the store's shared bucket did not answer in time (the store failed or was slow), by kind (call or search) and limit."},
			[]string{"kind", "limit"}),
		storeOps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolsift_store_operations_total",
			Help: "Operations on the store, by op (get, put, delete, delete_prefix, list, lock, watch, take_token) and outcome (ok; not_found: a get of a missing key; error)."},
			[]string{"op", "outcome"}),
		storeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "toolsift_store_operation_duration_seconds",
			Help:    "How long the store's operations took (every outcome; a lock's wait for the lock), by op; not watch.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}},
			[]string{"op"}),
	}
}

// userLabels bounds the user label: the first max users seen are
// themselves, the others "other".
type userLabels struct {
	mu   sync.Mutex
	max  int
	seen map[string]bool
}

// label is the user label of ctx's caller.
func (u *userLabels) label(ctx context.Context) string {
	id, _ := authn.IdentityFrom(ctx)
	if id.User == "" {
		return ""
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.seen[id.User] {
		if len(u.seen) >= u.max {
			return "other"
		}
		u.seen[id.User] = true
	}
	return id.User
}

// attach makes m the metrics of p, the one proxy it serves.
func (m *Metrics) attach(p *proxy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p != nil {
		return fmt.Errorf("%w: Telemetry.Metrics is another Gateway's already (NewMetrics makes one per Gateway)", ErrOptions)
	}
	m.p = p
	return nil
}

// Describe sends the descriptors of every metric m collects
// (prometheus.Collector).
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.searches.Describe(ch)
	m.searchTime.Describe(ch)
	m.searchFound.Describe(ch)
	m.calls.Describe(ch)
	m.callTime.Describe(ch)
	m.limited.Describe(ch)
	m.fallbacks.Describe(ch)
	m.storeOps.Describe(ch)
	m.storeTime.Describe(ch)
	for _, d := range []*prometheus.Desc{descServerState, descServerTools, descServerQuarantined, descServerRestarts,
		descSessions, descListens, descAuditQueued, descAuditDelayed, descAuditLost} {
		ch <- d
	}
}

// Collect sends the metrics' values, reading the gauges from the Gateway
// now (prometheus.Collector). The audit metrics are sent when the Gateway
// has Options.Audit.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.searches.Collect(ch)
	m.searchTime.Collect(ch)
	m.searchFound.Collect(ch)
	m.calls.Collect(ch)
	m.callTime.Collect(ch)
	m.limited.Collect(ch)
	m.fallbacks.Collect(ch)
	m.storeOps.Collect(ch)
	m.storeTime.Collect(ch)
	m.mu.Lock()
	p := m.p
	m.mu.Unlock()
	if p == nil {
		return
	}
	quarantined := map[string]int{}
	for _, c := range p.quarantine() {
		quarantined[c.server]++
	}
	for _, st := range p.hub.Status() {
		for _, s := range serverStates {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descServerState, prometheus.GaugeValue, v, st.Name, string(s))
		}
		ch <- prometheus.MustNewConstMetric(descServerTools, prometheus.GaugeValue, float64(st.Tools), st.Name)
		ch <- prometheus.MustNewConstMetric(descServerQuarantined, prometheus.GaugeValue, float64(quarantined[st.Name]), st.Name)
		ch <- prometheus.MustNewConstMetric(descServerRestarts, prometheus.CounterValue, float64(st.Restarts), st.Name)
	}
	sessions, listens := p.openStreams()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(sessions))
	ch <- prometheus.MustNewConstMetric(descListens, prometheus.GaugeValue, float64(listens))
	if a := p.opts.Audit; a != nil {
		st := a.Stats()
		ch <- prometheus.MustNewConstMetric(descAuditQueued, prometheus.GaugeValue, float64(st.Queued))
		ch <- prometheus.MustNewConstMetric(descAuditDelayed, prometheus.CounterValue, float64(st.Delayed))
		ch <- prometheus.MustNewConstMetric(descAuditLost, prometheus.CounterValue, float64(st.Lost))
	}
}

// openStreams counts the client sessions open on the sessions' servers
// (not the shared servers of stateless HTTP, which hold none a client
// keeps) and the listen streams open on the shared ones.
func (p *proxy) openStreams() (sessions, listens int) {
	p.mu.Lock()
	servers := make([]*session, 0, len(p.sessions))
	kept := make(map[*session]bool, 1)
	for s, since := range p.sessions {
		servers = append(servers, s)
		kept[s] = since.IsZero()
	}
	p.mu.Unlock()
	for _, s := range servers {
		if !kept[s] {
			for range s.srv.Sessions() {
				sessions++
			}
		}
		s.listen.mu.Lock()
		listens += len(s.listen.m)
		s.listen.mu.Unlock()
	}
	return sessions, listens
}

// knownMethods are the methods toolsift_requests_total names; any other
// is counted as "other", so that a client cannot grow the label set.
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true,
	"logging/setLevel": true, "server/discover": true, "subscriptions/listen": true,
	"notifications/initialized": true, "notifications/cancelled": true,
	"notifications/progress": true, "notifications/roots/list_changed": true,
}

// middleware counts each request a session's server receives, by method
// and outcome (toolsift_requests_total).
func (m *Metrics) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		outcome := "ok"
		if err != nil {
			outcome = "error"
		} else if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			outcome = "tool-error"
		}
		if !knownMethods[method] {
			method = "other"
		}
		if m.users != nil {
			m.requests.WithLabelValues(method, outcome, m.users.label(ctx)).Inc()
			return res, err
		}
		m.requests.WithLabelValues(method, outcome).Inc()
		return res, err
	}
}

// searched counts one search_tools answer: how long it took, how many
// tools it found, and its outcome (err: its arguments', or
// searchAnswer's). A nil m counts nothing.
func (m *Metrics) searched(took time.Duration, found int, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	switch {
	case errors.Is(err, think.ErrSearchArgs), errors.Is(err, retrieval.ErrSearch):
		outcome = "invalid"
	case err != nil:
		outcome = "error"
	default:
		m.searchFound.Observe(float64(found))
	}
	m.searches.WithLabelValues(outcome).Inc()
	m.searchTime.Observe(took.Seconds())
}

// called counts one tool call of server ("" for a tool no server has)
// by ctx's caller with its audit outcome, and, when it reached the
// server, how long it took. A nil m counts nothing.
func (m *Metrics) called(ctx context.Context, server, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.countCall(ctx, server, outcome)
	switch outcome {
	case "ok", "tool-error", "error", "cancelled":
		m.callTime.WithLabelValues(server).Observe(took.Seconds())
	}
}

// rateLimited counts one request the limit refused: kind is "call" (of a
// tool of server) or "search", and the refusal is counted among the
// calls' or searches' outcomes too. A nil m counts nothing.
func (m *Metrics) rateLimited(ctx context.Context, kind, limit, server string) {
	if m == nil {
		return
	}
	m.limited.WithLabelValues(kind, limit).Inc()
	if kind == "search" {
		m.searches.WithLabelValues("rate-limited").Inc()
	} else {
		m.countCall(ctx, server, "rate-limited")
	}
}

// limitFallback counts one request limit counted in this process's bucket
// as its shared bucket did not answer. A nil m counts nothing.
func (m *Metrics) limitFallback(kind, limit string) {
	if m == nil {
		return
	}
	m.fallbacks.WithLabelValues(kind, limit).Inc()
}

// countCall counts one call in toolsift_upstream_calls_total.
func (m *Metrics) countCall(ctx context.Context, server, outcome string) {
	if m.users != nil {
		m.calls.WithLabelValues(server, outcome, m.users.label(ctx)).Inc()
		return
	}
	m.calls.WithLabelValues(server, outcome).Inc()
}
