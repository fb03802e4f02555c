package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// TestRevokedEndsCall: a token revoked while its call runs upstream ends
// the call, on both wires (a 2025-11-25 session's POST, a 2026-07-28
// request): the upstream's handler sees its ctx end (the gateway sent
// notifications/cancelled), the client's call returns, and the audit
// record says revoked. Other calls, of other tokens, go on.
func TestRevokedEndsCall(t *testing.T) {
	ctx := context.Background()
	started, cancelled := make(chan string, 4), make(chan string, 4)
	slow, err := upstream.LocalServer(upstream.LocalTool{Name: "wait", Description: "Wait until cancelled.",
		Handler: func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ Who string }
			json.Unmarshal(args, &a)
			started <- a.Who
			<-ctx.Done()
			cancelled <- a.Who
			return "", ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	gw, err := gateway.Open(ctx, &config.Config{Servers: map[string]config.Server{"slow": slow}}, &gateway.Options{
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Audit:   &audit.Log{Store: st},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	tokens := authn.NewTokens(store.NewMemory())
	srv := httptest.NewServer(behind(tokens, nil, gw.Handler()))
	t.Cleanup(srv.Close)

	wait := func(t *testing.T, ch chan string, what string) string {
		t.Helper()
		select {
		case who := <-ch:
			return who
		case <-time.After(testenv.WaitLimit()):
			t.Fatalf("%s: timed out", what)
			return ""
		}
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			secret, tok, err := tokens.Create(ctx, "alice", nil, version)
			if err != nil {
				t.Fatal(err)
			}
			c := httpClient(t, srv.URL, secret, version)
			done := make(chan error, 1)
			go func() {
				res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "slow__wait", "arguments": map[string]any{"who": version}}})
				if err == nil && !res.IsError {
					t.Errorf("the revoked call answered %+v", res)
				}
				done <- err
			}()
			if who := wait(t, started, "the upstream call to start"); who != version {
				t.Fatalf("started %s's call", who)
			}
			revoked := time.Now()
			if err := tokens.Revoke(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
			if who := wait(t, cancelled, "the upstream call to be cancelled after the revocation"); who != version {
				t.Fatalf("cancelled %s's call", who)
			}
			select {
			case err := <-done:
				t.Logf("the client's call ended %v after the revocation: %v", time.Since(revoked).Round(time.Millisecond), err)
			case <-time.After(testenv.WaitLimit()):
				t.Fatal("the client's call did not end after the revocation")
			}
		})
	}
	var outcomes []string
	for rec, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, rec.User+" "+rec.Tool+" "+rec.Outcome)
	}
	if want := "alice slow__wait revoked"; len(outcomes) != 2 || outcomes[0] != want || outcomes[1] != want {
		t.Errorf("audit records %q, want two %q", outcomes, want)
	}
}
