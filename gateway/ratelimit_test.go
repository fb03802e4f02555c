package gateway_test

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/store"
)

// An hour's limits: the bucket refills one token every 3600/N seconds, so
// no token comes back while the test runs and the counts are exact.
const limitPolicy = `{
  "rules": [
    {"teams": ["a"], "allow": ["math", "text"], "limits": [
      {"name": "calls", "calls": 3, "per": "1h"},
      {"name": "add", "calls": 2, "per": "1h", "burst": 1, "tools": ["math__add"]},
      {"searches": 2, "per": "1h"},
    ]},
  ]
}`

// limitGateway serves scopedServers under pol with an audit log and
// metrics.
func limitGateway(t *testing.T, pol string) (*gateway.Gateway, *httptest.Server, *store.Memory, *prometheus.Registry) {
	t.Helper()
	p, err := config.ParsePolicy("limits.json", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	m := gateway.NewMetrics(0)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Open(context.Background(), scopedServers(t), &gateway.Options{
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Pin: []string{"*"}},
		Policy:    p,
		Audit:     &audit.Log{Store: st},
		Telemetry: gateway.Telemetry{Metrics: m},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(asMember(gw.Handler()))
	t.Cleanup(srv.Close)
	return gw, srv, st, reg
}

var retryIn = regexp.MustCompile(`retry in (\d+) s$`)

// refused checks that text is a refusal by limit, with a retry of want
// seconds, less the time the test took since the bucket was full (up to a
// minute, on a loaded machine).
func refused(t *testing.T, what, text string, isErr bool, limit string, want int) {
	t.Helper()
	m := retryIn.FindStringSubmatch(text)
	if !isErr || m == nil || !strings.Contains(text, "rate limited") || !strings.Contains(text, strconv.Quote(limit)) {
		t.Errorf("%s: %q (isError %v), want refused by limit %q with a retry time", what, text, isErr, limit)
		return
	}
	if n, _ := strconv.Atoi(m[1]); n < want-60 || n > want {
		t.Errorf("%s: retry in %d s, want %d (less at most a minute)", what, n, want)
	}
}

// TestRateLimits: alice, with 3 calls an hour, gets exactly 3 through
// (listed or through call_tool alike), then refusals naming the limit and
// the seconds to wait (1200: a token every 3600/3 s); bob, of the same
// team, has his own bucket; math__add's own limit (burst 1, 2 an hour)
// holds through call_tool; searches have theirs; each refusal is audited
// rate-limited and counted in toolsift_rate_limited_total.
func TestRateLimits(t *testing.T) {
	_, srv, st, reg := limitGateway(t, limitPolicy)
	alice := connectAs(t, srv.URL, "alice:a", "2025-11-25")
	bob := connectAs(t, srv.URL, "bob:a", "2025-11-25")

	for i, name := range []string{"text__upper", "math__divide"} {
		if text, isErr := alice.call(t, name, map[string]any{}); isErr {
			t.Fatalf("alice's call %d (%s): %q", i+1, name, text)
		}
	}
	// The per-tool limit: burst 1, so one math__add through call_tool...
	if text, isErr := alice.call(t, "call_tool", map[string]any{"name": "math__add"}); isErr || text != "math.add" {
		t.Fatalf("alice's math__add through call_tool: %q (isError %v)", text, isErr)
	}
	// ...then "calls" is spent (3 calls) and refuses everything.
	text, isErr := alice.call(t, "text__upper", map[string]any{})
	refused(t, "alice's 4th call", text, isErr, "calls", 1200)
	text, isErr = alice.call(t, "call_tool", map[string]any{"name": "text__count_words"})
	refused(t, "alice's 5th call, through call_tool", text, isErr, "calls", 1200)

	// bob: his own buckets. His second math__add is refused by "add"
	// (burst 1; a token every 1800 s), and takes none of "calls".
	if text, isErr := bob.call(t, "math__add", map[string]any{}); isErr {
		t.Fatalf("bob's math__add: %q", text)
	}
	text, isErr = bob.call(t, "call_tool", map[string]any{"name": "math__add"})
	refused(t, "bob's 2nd math__add", text, isErr, "add", 1800)
	for i := range 2 {
		if text, isErr := bob.call(t, "text__upper", map[string]any{}); isErr {
			t.Fatalf("bob's text__upper %d: %q", i+1, text)
		}
	}
	text, isErr = bob.call(t, "text__upper", map[string]any{})
	refused(t, "bob's 4th call", text, isErr, "calls", 1200)

	// Searches: 2 an hour (the default burst: the count).
	alice.search(t, "add two numbers", 1)
	alice.search(t, "upper case", 1)
	text, isErr = alice.call(t, "search_tools", map[string]any{"query": "divide"})
	refused(t, "alice's 3rd search", text, isErr, "rule 1 limit 3", 1800)
	bob.search(t, "add two numbers", 1) // his own

	outcomes := map[string]int{}
	for rec, err := range audit.Records(context.Background(), st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Outcome == "rate-limited" {
			outcomes[rec.User+" "+rec.Tool]++
		}
	}
	want := map[string]int{"alice text__upper": 1, "alice text__count_words": 1, "bob math__add": 1, "bob text__upper": 1, "alice search_tools": 1}
	if !mapsEqual(outcomes, want) {
		t.Errorf("rate-limited audit records: %v, want %v", outcomes, want)
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for k, v := range seriesOf(families) {
		if strings.HasPrefix(k, "toolsift_rate_limited_total") || strings.Contains(k, `outcome="rate-limited"`) {
			got[k] = v
		}
	}
	wantSeries := map[string]float64{
		`toolsift_rate_limited_total{kind="call",limit="calls"}`:              3,
		`toolsift_rate_limited_total{kind="call",limit="add"}`:                1,
		`toolsift_rate_limited_total{kind="search",limit="rule 1 limit 3"}`:   1,
		`toolsift_upstream_calls_total{outcome="rate-limited",server="text"}`: 3,
		`toolsift_upstream_calls_total{outcome="rate-limited",server="math"}`: 1,
		`toolsift_searches_total{outcome="rate-limited"}`:                     1,
	}
	if !mapsEqual(got, wantSeries) {
		t.Errorf("rate-limit series:\n%v\nwant\n%v", got, wantSeries)
	}
}

func mapsEqual[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRateLimitsSetPolicy: a reloaded policy whose limit is unchanged
// keeps its buckets (alice stays refused); a changed limit starts afresh
// with its new count; a bad limit is refused and the policy in force
// stays.
func TestRateLimitsSetPolicy(t *testing.T) {
	const two = `{"rules": [{"teams": ["a"], "allow": ["text"], "limits": [{"calls": 2, "per": "1h"}]}]}`
	gw, srv, _, _ := limitGateway(t, two)
	alice := connectAs(t, srv.URL, "alice:a", "2025-11-25")
	calls := func(n int) {
		t.Helper()
		for i := range n {
			if text, isErr := alice.call(t, "text__upper", map[string]any{}); isErr {
				t.Fatalf("call %d of %d: %q", i+1, n, text)
			}
		}
	}
	calls(2)
	text, isErr := alice.call(t, "text__upper", map[string]any{})
	refused(t, "the 3rd call", text, isErr, "rule 1 limit 1", 1800)

	set := func(src string) {
		t.Helper()
		p, err := config.ParsePolicy("limits.json", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gw.SetPolicy(p); err != nil {
			t.Fatal(err)
		}
	}
	set(two) // the same limit: its buckets stay
	text, isErr = alice.call(t, "text__upper", map[string]any{})
	refused(t, "a call after reloading the same policy", text, isErr, "rule 1 limit 1", 1800)

	set(strings.Replace(two, `"calls": 2`, `"calls": 4`, 1))
	calls(4)
	text, isErr = alice.call(t, "text__upper", map[string]any{})
	refused(t, "the 5th call under the new limit", text, isErr, "rule 1 limit 1", 900)

	bad := &config.Policy{Rules: []config.PolicyRule{{Teams: []string{"a"}, Allow: []string{"text"},
		Limits: []config.PolicyLimit{{Calls: 1, Searches: 1, Per: time.Minute}}}}}
	if _, err := gw.SetPolicy(bad); err == nil || !strings.Contains(err.Error(), "rule 1 limit 1") {
		t.Errorf("SetPolicy(a limit of calls and searches) = %v, want an error naming rule 1 limit 1", err)
	}
	set(`{"rules": [{"teams": ["a"], "allow": ["text"]}]}`) // no limits
	calls(3)
}

// seriesOf is series of what a registry gathered.
func seriesOf(families []*dto.MetricFamily) map[string]float64 {
	m := map[string]*dto.MetricFamily{}
	for _, f := range families {
		m[f.GetName()] = f
	}
	return series(m)
}

// TestRateLimitsLatestWire: a client of 2026-07-28 (no session: the
// shared server) is held to the same buckets as its user's sessions of
// 2025-11-25, and anonymous callers share theirs.
func TestRateLimitsLatestWire(t *testing.T) {
	_, srv, _, _ := limitGateway(t, `{
  "rules": [{"users": ["*"], "allow": ["text"], "limits": [{"calls": 2, "per": "1h"}]}],
  "anonymous": {"allow": ["text"], "limits": [{"name": "anon", "calls": 1, "per": "1h"}]}
}`)
	old := connectAs(t, srv.URL, "alice:a", "2025-11-25")
	latest := connectAs(t, srv.URL, "alice:a", "2026-07-28")
	if text, isErr := old.call(t, "text__upper", map[string]any{}); isErr {
		t.Fatalf("alice's first call: %q", text)
	}
	if text, isErr := latest.call(t, "call_tool", map[string]any{"name": "text__upper"}); isErr {
		t.Fatalf("alice's second call, of 2026-07-28: %q", text)
	}
	text, isErr := latest.call(t, "text__upper", map[string]any{})
	refused(t, "alice's third call, of 2026-07-28", text, isErr, "rule 1 limit 1", 1800)

	anon1, anon2 := connectAs(t, srv.URL, "", "2026-07-28"), connectAs(t, srv.URL, "", "2025-11-25")
	if text, isErr := anon1.call(t, "text__upper", map[string]any{}); isErr {
		t.Fatalf("the first anonymous call: %q", text)
	}
	text, isErr = anon2.call(t, "text__upper", map[string]any{})
	refused(t, "another anonymous caller's call", text, isErr, "anon", 3600)
}
