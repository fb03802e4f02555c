package authn_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// TestRevokedOnEveryReplica: two servers over one store folder stand in
// for two replicas; a token revoked through one is refused by the other
// once TokenCacheTTL (under a second) has passed since that one last read
// it. The time is the test's clock: no sleeping, no timing assertion.
func TestRevokedOnEveryReplica(t *testing.T) {
	ctx := context.Background()
	folder := t.TempDir()
	var mu sync.Mutex
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	var urls []string
	var replicas []*authn.Tokens
	for range 2 {
		tokens := authn.NewTokens(newDir(t, folder))
		tokens.SetClock(clock)
		srv := httptest.NewServer(authn.Require(tokens, nil)(whoami))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
		replicas = append(replicas, tokens)
	}
	if authn.TokenCacheTTL >= time.Second {
		t.Fatalf("TokenCacheTTL = %v: a revoked token would outlive a second on other replicas", authn.TokenCacheTTL)
	}
	secret, tok, err := replicas[0].Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		if resp, _ := post(t, u, "Bearer "+secret); resp.StatusCode != http.StatusOK {
			t.Fatalf("replica %d: a request with alice's token: %s", i+1, resp.Status)
		}
	}
	if err := replicas[0].Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, urls[0], "Bearer "+secret); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replica 1 (revoked there): %s, want 401", resp.Status)
	}
	advance(authn.TokenCacheTTL)
	resp, body := post(t, urls[1], "Bearer "+secret)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replica 2, %v after the revocation: %s, want 401", authn.TokenCacheTTL, resp.Status)
	}
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("401 without a WWW-Authenticate: Bearer header (%q)", got)
	}
	if strings.Contains(body, secret) {
		t.Errorf("the 401's body holds the token: %s", body)
	}
}

// watchedMemory is one process's handle on a store.Memory that several
// share, telling its watchers of the changes made through the others, as
// a shared store (PostgreSQL) does.
type watchedMemory struct {
	*store.Memory
	hub *watchHub
}

type watchHub struct {
	mu       sync.Mutex
	watchers map[*watchedMemory][]func(string)
	watching chan struct{} // gets a value when a Watch starts
}

func (w *watchedMemory) notify(key string) {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	for h, fs := range w.hub.watchers {
		if h != w {
			for _, f := range fs {
				f(key)
			}
		}
	}
}

func (w *watchedMemory) Put(ctx context.Context, key string, v []byte) error {
	err := w.Memory.Put(ctx, key, v)
	if err == nil {
		w.notify(key)
	}
	return err
}

func (w *watchedMemory) Delete(ctx context.Context, key string) error {
	err := w.Memory.Delete(ctx, key)
	if err == nil {
		w.notify(key)
	}
	return err
}

func (w *watchedMemory) Watch(ctx context.Context, prefix string, ready func(), f func(string)) error {
	w.hub.mu.Lock()
	w.hub.watchers[w] = append(w.hub.watchers[w], func(k string) {
		if strings.HasPrefix(k, prefix) {
			f(k)
		}
	})
	w.hub.mu.Unlock()
	if ready != nil {
		ready()
	}
	w.hub.watching <- struct{}{}
	<-ctx.Done()
	w.hub.mu.Lock()
	delete(w.hub.watchers, w)
	w.hub.mu.Unlock()
	return ctx.Err()
}

// TestRevokedAtOnceWithWatcher: over a store that tells of changes
// (store.Watcher), a token revoked by another process is refused at once,
// the clock not moved past the cache's TTL.
func TestRevokedAtOnceWithWatcher(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	hub := &watchHub{watchers: map[*watchedMemory][]func(string){}, watching: make(chan struct{}, 1)}
	other := authn.NewTokens(&watchedMemory{mem, hub})
	tokens := authn.NewTokens(&watchedMemory{mem, hub})
	now := time.Now()
	tokens.SetClock(func() time.Time { return now }) // the cache never expires
	srv := httptest.NewServer(authn.Require(tokens, nil)(whoami))
	defer srv.Close()
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	watched := make(chan error, 1)
	go func() { watched <- tokens.Watch(watchCtx) }()
	select {
	case <-hub.watching:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("Watch does not watch the tokens' store")
	}
	secret, tok, err := other.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, srv.URL, "Bearer "+secret); resp.StatusCode != http.StatusOK {
		t.Fatalf("a request with alice's token: %s", resp.Status)
	}
	if err := other.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, srv.URL, "Bearer "+secret); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after another process revoked it: %s, want 401 at once", resp.Status)
	}
	stop()
	if err := <-watched; err != nil {
		t.Errorf("Watch ended with %v, want nil once its ctx ended", err)
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if len(hub.watchers) != 0 {
		t.Error("Watch returned with its watch running")
	}
}

// brokenGets is a store whose reads fail, quoting the key as a store's
// error may.
type brokenGets struct{ store.Store }

func (brokenGets) Get(_ context.Context, key string) ([]byte, error) {
	return nil, errors.New("connection refused reading " + key)
}

// TestTokenStoreDown: when the store cannot be read, a request gets 503
// (not 401: the client's token is not at fault) and the log says why,
// naming neither the token nor its hash.
func TestTokenStoreDown(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	secret, _, err := authn.NewTokens(mem).Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf testenv.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	srv := httptest.NewServer(authn.Require(authn.NewTokens(brokenGets{mem}), &authn.Options{Logger: log})(whoami))
	defer srv.Close()
	resp, body := post(t, srv.URL, "Bearer "+secret)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("store down: %s (WWW-Authenticate %q) %q, want 503 without a challenge", resp.Status, resp.Header.Get("WWW-Authenticate"), body)
	}
	if !strings.Contains(buf.String(), `msg="verifying an API token"`) || !strings.Contains(buf.String(), "connection refused") {
		t.Errorf("the log does not say why:\n%s", buf.String())
	}
	for _, s := range []string{secret, sha256Hex(secret)} {
		if strings.Contains(buf.String(), s) || strings.Contains(body, s) {
			t.Errorf("the log or the answer holds the token or its hash:\n%s\n%s", buf.String(), body)
		}
	}
}
