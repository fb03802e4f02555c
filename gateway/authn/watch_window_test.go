package authn_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/storewindow"
	"github.com/toolsift/toolsift/internal/testenv"
)

// TestRevokedBeforeWatchListens: a token this replica verified (and
// cached) at start, revoked by another replica before this one's watch
// of the tokens listens, is refused once the watch listens, the clock
// not moved past the cache's TTL. Over PostgreSQL.
func TestRevokedBeforeWatchListens(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t)
	other := authn.NewTokens(openPostgres(t, url))
	secret, tok, err := other.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ws := storewindow.New(openPostgres(t, url), "tokens/hash/", nil)
	ws.Before = func() {
		if err := other.Revoke(ctx, tok.ID); err != nil {
			t.Error(err)
		}
	}
	tokens := authn.NewTokens(ws)
	now := time.Now()
	tokens.SetClock(func() time.Time { return now }) // the cache never expires
	if id, err := tokens.Verify(ctx, secret); err != nil || id.User != "alice" {
		t.Fatalf("Verify before the revocation = %v, %v", id, err)
	}
	watchCtx, stop := context.WithCancel(ctx)
	watched := make(chan error, 1)
	go func() { watched <- tokens.Watch(watchCtx) }()
	defer func() {
		stop()
		if err := <-watched; err != nil {
			t.Errorf("Watch ended with %v, want nil once its ctx ended", err)
		}
	}()
	select {
	case <-ws.Listening:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the watch of the tokens did not listen")
	}
	if id, err := tokens.Verify(ctx, secret); !errors.Is(err, authn.ErrUnknownToken) {
		t.Fatalf("Verify of a token revoked before the watch listened = %v, %v; want ErrUnknownToken", id, err)
	}
}
