package upstream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// TestRetry: a server whose first connection failed for want of a login
// stays failed until Retry; once the login is there, Retry connects it and
// its tools join. Retrying a ready server does nothing.
func TestRetry(t *testing.T) {
	srv := newBearerServer(t, "good")
	errLogin := errors.New("not logged in")
	a := &tokens{err: errLogin}
	cfg := &config.Config{Servers: map[string]config.Server{"remote": {URL: srv.URL + "/mcp", Type: "http"}}}
	hub := startHub(t, cfg, &upstream.HubOptions{Auth: a, MaxRestarts: -1, Store: store.NewMemory()}, nil)
	if st := statusOf(t, hub, "remote"); st.State != upstream.StateFailed || len(hub.Tools()) != 0 {
		t.Fatalf("before the login: %s with %d tools, want failed with none", st.State, len(hub.Tools()))
	}
	// Still no login: Retry says why.
	if err := hub.Retry(context.Background(), "remote"); !errors.Is(err, errLogin) {
		t.Fatalf("Retry without a login = %v, want %v", err, errLogin)
	}
	a.mu.Lock()
	a.token, a.err = "good", nil
	a.mu.Unlock()
	if err := hub.Retry(context.Background(), "remote"); err != nil {
		t.Fatalf("Retry after the login: %v", err)
	}
	if st := statusOf(t, hub, "remote"); st.State != upstream.StateReady || len(hub.Tools()) == 0 {
		t.Fatalf("after Retry: %s with %d tools, want ready with its tools", st.State, len(hub.Tools()))
	}
	requests := len(srv.headers())
	if err := hub.Retry(context.Background(), "remote"); err != nil || len(srv.headers()) != requests {
		t.Fatalf("Retry of a ready server = %v after %d more requests, want nil and none", err, len(srv.headers())-requests)
	}
	if err := hub.Retry(context.Background(), "nope"); err == nil {
		t.Fatal("Retry of an unknown server: no error")
	}
}
