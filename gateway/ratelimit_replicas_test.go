package gateway_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store/postgres"
)

// An hour's limits, as limitPolicy's: no token comes back while the test
// runs, so the counts are exact.
const replicaPolicy = `{
  "rules": [
    {"teams": ["a"], "allow": ["math", "text"], "limits": [
      {"name": "calls", "calls": 20, "per": "1h"},
      {"name": "add", "calls": 4, "per": "1h", "tools": ["math__add"]},
      {"name": "searches", "searches": 6, "per": "1h"},
    ]},
  ]
}`

// replica is one gateway of a team on the PostgreSQL database at url,
// with a store of its own (a replica's), under pol, with its metrics.
func replica(t *testing.T, url, pol string) (*gateway.Gateway, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	p, err := config.ParsePolicy("limits.json", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := gateway.NewMetrics(0)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
		Toolset:   toolsift.Options{NoSemantic: true, Store: st, Pin: []string{"*"}},
		Policy:    p,
		Telemetry: gateway.Telemetry{Metrics: m},
	})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() }) // closes st, the Toolset's
	// A loaded machine's slow answer must not send a take to the
	// replica's own bucket: the counts would no longer be the store's.
	gw.SetSharedLimitWait(testenv.WaitLimit())
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	return gw, srv, reg
}

// outcome is one concurrent call's answer.
type outcome struct {
	text  string
	isErr bool
	err   error
}

// concurrently makes n calls of name with args, spread over clients, all
// at once, and returns their answers.
func concurrently(clients []*client, n int, name string, args map[string]any) []outcome {
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		c := clients[i%len(clients)]
		wg.Go(func() {
			res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				out[i].err = err
				return
			}
			out[i] = outcome{text: resultText(res), isErr: res.IsError}
		})
	}
	wg.Wait()
	return out
}

// tally checks outs: each through, or refused by limit with a retry of
// about retry seconds; it returns how many went through.
func tally(t *testing.T, what string, outs []outcome, limit string, retry int) int {
	t.Helper()
	through := 0
	for i, o := range outs {
		switch {
		case o.err != nil:
			t.Errorf("%s %d: %v", what, i+1, o.err)
		case !o.isErr:
			through++
		default:
			refused(t, what, o.text, o.isErr, limit, retry)
		}
	}
	return through
}

// TestRateLimitsAcrossReplicas: two gateways on one PostgreSQL database,
// each with its own store, its clients of both wires calling at once.
// alice, with 20 calls an hour, gets exactly 20 of 40 through in total,
// the others refused naming the limit with a retry time (180 s: a token
// every 3600/20 s); carol, of the same team, is unaffected; bob's
// math__add through call_tool is held to its own limit (4 an hour) across
// the replicas, and the calls "add" refused give their "calls" token back
// on the store (bob then has 16 calls of 20 left); searches are limited
// across the replicas too. No take fell back to a replica's own bucket.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	url := pgtest.Start(t)
	_, srv1, reg1 := replica(t, url, replicaPolicy)
	_, srv2, reg2 := replica(t, url, replicaPolicy)
	as := func(user string) []*client {
		return []*client{
			connectAs(t, srv1.URL, user, "2025-11-25"), connectAs(t, srv2.URL, user, "2026-07-28"),
			connectAs(t, srv1.URL, user, "2026-07-28"), connectAs(t, srv2.URL, user, "2025-11-25"),
		}
	}
	alice, bob, carol := as("alice:a"), as("bob:a"), as("carol:a")

	outs := concurrently(alice, 40, "text__upper", map[string]any{})
	if n := tally(t, "alice's calls", outs, "calls", 180); n != 20 {
		t.Errorf("%d of alice's 40 calls through both replicas, want exactly 20", n)
	}
	for i, c := range alice {
		text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__divide"})
		refused(t, "alice's call after her 20, client "+string(rune('1'+i)), text, isErr, "calls", 180)
	}
	for i, c := range carol {
		if text, isErr := c.call(t, "text__upper", map[string]any{}); isErr {
			t.Errorf("carol's call %d: %q, want through (her own bucket)", i+1, text)
		}
	}

	outs = concurrently(bob, 12, "call_tool", map[string]any{"name": "math__add"})
	if n := tally(t, "bob's math__add", outs, "add", 900); n != 4 {
		t.Errorf("%d of bob's 12 math__add through call_tool on both replicas, want exactly 4", n)
	}
	outs = concurrently(bob, 20, "text__count_words", map[string]any{})
	if n := tally(t, "bob's other calls", outs, "calls", 180); n != 16 {
		t.Errorf("%d of bob's 20 other calls through, want 16 (20 less his 4 math__add: the refused ones gave theirs back)", n)
	}

	outs = concurrently(alice, 10, "search_tools", map[string]any{"query": "add two numbers"})
	if n := tally(t, "alice's searches", outs, "searches", 600); n != 6 {
		t.Errorf("%d of alice's 10 searches through both replicas, want exactly 6", n)
	}
	if ans := carol[1].search(t, "upper case", 1); len(ans.Tools) == 0 {
		t.Errorf("carol's search: %+v", ans)
	}

	limited := 0.0
	for i, reg := range []*prometheus.Registry{reg1, reg2} {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range seriesOf(families) {
			switch {
			case strings.HasPrefix(k, "toolsift_rate_limit_fallbacks_total"):
				t.Errorf("replica %d: %s = %v, want none", i+1, k, v)
			case strings.HasPrefix(k, "toolsift_rate_limited_total"):
				limited += v
			}
		}
	}
	if want := float64(20 + len(alice) + 8 + 4 + 4); limited != want {
		t.Errorf("toolsift_rate_limited_total over both replicas: %v, want %v", limited, want)
	}
}

// TestRateLimitsStoreOutage: while the PostgreSQL store is away, a
// replica's limits hold from its own buckets (full at first: alice, who
// took 2 of her 5 from the store, gets 5 through then a refusal), each
// request so counted counted as a fallback; the store is not asked again
// for the pause after a failed take (a call when it is back is still
// counted from memory); then its bucket is used again (the 3 tokens
// alice had left there, then a refusal), and nothing more falls back.
func TestRateLimitsStoreOutage(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	gw, srv, reg := replica(t, cluster.Database(t), `{"rules": [{"teams": ["a"], "allow": ["text"], "limits": [
  {"name": "calls", "calls": 5, "per": "1h"}]}]}`)
	alice := connectAs(t, srv.URL, "alice:a", "2025-11-25")
	calls := func(what string, n int) {
		t.Helper()
		for i := range n {
			if text, isErr := alice.call(t, "text__upper", map[string]any{}); isErr {
				t.Fatalf("%s, call %d of %d: %q", what, i+1, n, text)
			}
		}
		text, isErr := alice.call(t, "text__upper", map[string]any{})
		refused(t, what+", the call after", text, isErr, "calls", 720)
	}
	fallbacks := func() float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return seriesOf(families)[`toolsift_rate_limit_fallbacks_total{kind="call",limit="calls"}`]
	}
	for i := range 2 {
		if text, isErr := alice.call(t, "text__upper", map[string]any{}); isErr {
			t.Fatalf("call %d before the outage: %q", i+1, text)
		}
	}

	// The store is not asked for an hour after a failed take: after the
	// first call of the outage, none waits for it.
	gw.SetSharedLimitPause(time.Hour)
	cluster.Stop(t)
	calls("during the outage", 5)
	if n := fallbacks(); n != 6 {
		t.Errorf("%v fallbacks counted during the outage, want 6 (each of its calls)", n)
	}

	cluster.Restart(t)
	text, isErr := alice.call(t, "text__upper", map[string]any{})
	refused(t, "a call when the store is back but not asked yet", text, isErr, "calls", 720)
	gw.SetSharedLimitPause(-1) // ask it from now on
	calls("after the outage", 3)
	if n := fallbacks(); n != 7 {
		t.Errorf("%v fallbacks counted after the outage, want still 7", n)
	}
}

// TestRateLimitsAcrossReplicasReload: a policy reloaded on both replicas
// with the limit unchanged keeps the store's buckets (alice, who spent
// her 2 through the two replicas, stays refused); a changed limit starts
// afresh in the store too (4 more through, across both, then refused).
func TestRateLimitsAcrossReplicasReload(t *testing.T) {
	const two = `{"rules": [{"teams": ["a"], "allow": ["text"], "limits": [{"calls": 2, "per": "1h"}]}]}`
	url := pgtest.Start(t)
	gw1, srv1, _ := replica(t, url, two)
	gw2, srv2, _ := replica(t, url, two)
	alice := []*client{connectAs(t, srv1.URL, "alice:a", "2025-11-25"), connectAs(t, srv2.URL, "alice:a", "2026-07-28")}
	set := func(src string) {
		t.Helper()
		p, err := config.ParsePolicy("limits.json", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, gw := range []*gateway.Gateway{gw1, gw2} {
			if _, err := gw.SetPolicy(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := tally(t, "alice's calls", concurrently(alice, 4, "text__upper", map[string]any{}), "rule 1 limit 1", 1800); n != 2 {
		t.Fatalf("%d of alice's 4 calls through, want 2", n)
	}
	set(two)
	for i, c := range alice {
		text, isErr := c.call(t, "text__upper", map[string]any{})
		refused(t, "a call after reloading the same policy, replica "+string(rune('1'+i)), text, isErr, "rule 1 limit 1", 1800)
	}
	set(strings.Replace(two, `"calls": 2`, `"calls": 4`, 1))
	if n := tally(t, "alice's calls under the new limit", concurrently(alice, 8, "text__upper", map[string]any{}), "rule 1 limit 1", 900); n != 4 {
		t.Errorf("%d of alice's 8 calls through under the new limit, want 4", n)
	}
}
