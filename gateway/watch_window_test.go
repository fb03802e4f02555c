package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/storetest"
)

// TestRevokedBeforeWatchListens: a token this replica verified (and
// cached) at start, revoked by another replica before this one's watch
// of the tokens listens, is refused once the watch listens, the clock
// not moved past the cache's TTL. Over PostgreSQL.
func TestRevokedBeforeWatchListens(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	other := gateway.NewTokens(openPostgres(t, url))
	secret, tok, err := other.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ws := storetest.NewWindow(openPostgres(t, url), "tokens/hash/", nil)
	ws.Before = func() {
		if err := other.Revoke(ctx, tok.ID); err != nil {
			t.Error(err)
		}
	}
	tokens := gateway.NewTokens(ws)
	now := time.Now()
	tokens.SetClock(func() time.Time { return now }) // the cache never expires
	if id, err := tokens.Verify(ctx, secret); err != nil || id.User != "alice" {
		t.Fatalf("Verify before the revocation = %v, %v", id, err)
	}
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{Tokens: tokens, Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	select {
	case <-ws.Listening:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the Gateway's watch of its tokens did not listen")
	}
	if id, err := tokens.Verify(ctx, secret); !errors.Is(err, gateway.ErrUnknownToken) {
		t.Fatalf("Verify of a token revoked before the watch listened = %v, %v; want ErrUnknownToken", id, err)
	}
}
