package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/upstream"
)

// TestStoreOutage: a gateway with API tokens and the audit log whose one
// store (tokens, audit records, the Hub's lists and trust records) is a
// PostgreSQL server that goes away and comes back. While it is away, a
// token verified before goes on working from memory: searches and calls
// of both wires are answered, a call in flight when it went returns,
// and no call waits for its audit record, which is kept in memory; a
// token never verified is refused with 503, one revoked before stays
// refused. Once the server is back every call's record is written.
func TestStoreOutage(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	var logs testenv.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	st, err := postgres.Open(ctx, cluster.Database(t), &postgres.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	gated, err := upstream.LocalServer(upstream.LocalTool{Name: "wait", Description: "Wait at the gate.",
		Handler: func(ctx context.Context, _ json.RawMessage) (string, error) {
			entered <- struct{}{}
			select {
			case <-gate:
				return "through", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := localTools(t)
	cfg.Servers["gate"] = gated
	alog := &audit.Log{Store: st, Logger: log}
	gw, err := gateway.Open(ctx, cfg, &gateway.Options{
		Audit:     alog,
		Toolset:   toolsift.Options{NoSemantic: true, Store: st},
		Telemetry: gateway.Telemetry{Logger: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	tokens := authn.NewTokens(st)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); tokens.Watch(wctx) }()
	t.Cleanup(func() { stopWatch(); <-watched })
	srv := httptest.NewServer(behind(tokens, log, gw.Handler()))
	t.Cleanup(srv.Close)

	alice, _, err := tokens.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := tokens.Create(ctx, "bob", nil, "never used before the outage")
	if err != nil {
		t.Fatal(err)
	}
	carol, carolTok, err := tokens.Create(ctx, "carol", nil, "revoked before the outage")
	if err != nil {
		t.Fatal(err)
	}
	alice25, alice26 := httpClient(t, srv.URL, alice, "2025-11-25"), httpClient(t, srv.URL, alice, "2026-07-28")
	add := map[string]any{"name": "math__add", "arguments": map[string]any{"a": 2, "b": 3}}
	calls := 0 // alice's calls, each of which must have a record in the end
	call := func(c *client, what string) {
		t.Helper()
		if text, isErr := c.call(t, "call_tool", add); isErr || text != "5" {
			t.Errorf("%s: call_tool = %q (isError %v), want 5", what, text, isErr)
		}
		calls++
	}
	search := func(c *client, what string) {
		t.Helper()
		if ans := c.search(t, "add two numbers", 1); len(ans.Tools) == 0 || ans.Tools[0].Name != "math__add" {
			t.Errorf("%s: search_tools = %+v, want math__add", what, ans.Tools)
		}
	}
	for _, c := range []*client{alice25, alice26} {
		search(c, "before the outage")
		call(c, "before the outage")
	}
	status := func(secret string) int {
		t.Helper()
		resp, _ := post(t, srv.URL, "", "Bearer "+secret, "", initBody)
		return resp.StatusCode
	}
	if got := status(carol); got != http.StatusOK {
		t.Fatalf("carol before the outage: %d", got)
	}
	if err := tokens.Revoke(ctx, carolTok.ID); err != nil {
		t.Fatal(err)
	}

	// A call in flight when the server goes away.
	inFlight := make(chan string, 1)
	go func() {
		res, err := alice25.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "gate__wait"}})
		switch {
		case err != nil:
			inFlight <- err.Error()
		default:
			inFlight <- resultText(res)
		}
	}()
	<-entered
	cluster.Stop(t)
	down := time.Now()
	close(gate)
	if got := <-inFlight; got != "through" {
		t.Errorf("the call in flight when the store went away: %q, want through", got)
	}
	calls++

	// While it is away: alice's searches and calls, both wires, for
	// longer than the tokens are cached.
	var slowest time.Duration
	rounds := 0
	for time.Since(down) < 4*authn.TokenCacheTTL || rounds < 10 {
		for _, c := range []*client{alice25, alice26} {
			start := time.Now()
			search(c, "during the outage")
			call(c, "during the outage")
			slowest = max(slowest, time.Since(start))
		}
		rounds++
	}
	if got := status(bob); got != http.StatusServiceUnavailable {
		t.Errorf("bob's token, never verified, during the outage: %d, want 503", got)
	}
	if got := status(carol); got == http.StatusOK {
		t.Errorf("carol's token, revoked before the outage, during it: %d, want refused", got)
	}
	queued := alog.Stats().Queued
	t.Logf("%d rounds of a search and a call on each wire in %v of outage, the slowest round %v; %d audit records waiting",
		rounds, time.Since(down).Round(time.Millisecond), slowest.Round(time.Millisecond), queued)
	if queued == 0 {
		t.Error("no audit record waits in memory during the outage: the calls waited for the store")
	}

	cluster.Restart(t)
	fctx, cancel := context.WithTimeout(ctx, testenv.WaitLimit())
	defer cancel()
	if err := alog.Flush(fctx); err != nil {
		t.Fatalf("Flush after the store came back: %v", err)
	}
	if s := alog.Stats(); s.Queued != 0 || s.Lost != 0 || s.Delayed == 0 {
		t.Errorf("audit stats after the store came back: %+v, want none queued or lost, some delayed", s)
	}
	n := 0
	for rec, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.User == "alice" {
			n++
			if rec.Outcome != "ok" {
				t.Errorf("record %+v", rec)
			}
		}
	}
	if n != calls {
		t.Errorf("%d audit records of alice's calls, want %d", n, calls)
	}
	for _, want := range []string{"audit records kept in memory", "audit records written"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
	// After the outage, the store is read again: bob's token works.
	if got := status(bob); got != http.StatusOK {
		t.Errorf("bob after the outage: %d", got)
	}
}
