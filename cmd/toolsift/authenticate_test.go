package main

import (
	"context"
	"io"
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

// watchedMemory is one process's handle on a store.Memory that two
// share: a write through one is told to the other's watchers, as a shared
// database tells its replicas.
type watchedMemory struct {
	*store.Memory
	peers    *watchPeers
	watching chan struct{} // a value when a Watch of this handle listens
}

type watchPeers struct {
	mu       sync.Mutex
	watchers map[*watchedMemory]func(string)
}

func (w *watchedMemory) tell(key string) {
	w.peers.mu.Lock()
	defer w.peers.mu.Unlock()
	for h, f := range w.peers.watchers {
		if h != w {
			f(key)
		}
	}
}

func (w *watchedMemory) Put(ctx context.Context, key string, v []byte) error {
	err := w.Memory.Put(ctx, key, v)
	if err == nil {
		w.tell(key)
	}
	return err
}

func (w *watchedMemory) Delete(ctx context.Context, key string) error {
	err := w.Memory.Delete(ctx, key)
	if err == nil {
		w.tell(key)
	}
	return err
}

func (w *watchedMemory) Watch(ctx context.Context, prefix string, ready func(), f func(string)) error {
	w.peers.mu.Lock()
	w.peers.watchers[w] = func(k string) {
		if strings.HasPrefix(k, prefix) {
			f(k)
		}
	}
	w.peers.mu.Unlock()
	ready()
	w.watching <- struct{}{}
	<-ctx.Done()
	w.peers.mu.Lock()
	delete(w.peers.watchers, w)
	w.peers.mu.Unlock()
	return nil
}

// TestAuthenticate: what serve puts in front of the gateway's handler.
// With --tokens, a request needs a live API token, its 401 says how to
// get one, and the store's watch runs until stop: a token revoked through
// another serve is refused at the next request, though this one had just
// read it. With a shared token, that token; with neither, nothing.
func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := authn.IdentityFrom(r.Context())
		io.WriteString(w, "hello "+id.User)
	})
	get := func(t *testing.T, h http.Handler, bearer string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	log := slog.New(slog.DiscardHandler)

	t.Run("tokens", func(t *testing.T) {
		mem, peers := store.NewMemory(), &watchPeers{watchers: map[*watchedMemory]func(string){}}
		here := &watchedMemory{mem, peers, make(chan struct{}, 1)}
		elsewhere := authn.NewTokens(&watchedMemory{mem, peers, make(chan struct{}, 1)})
		h, authenticated, stop := identities{tokens: authn.NewTokens(here)}.authenticate(ctx, log, ok, "")
		if !authenticated {
			t.Error("authenticated = false with --tokens")
		}
		select {
		case <-here.watching:
		case <-time.After(testenv.WaitLimit()):
			t.Fatal("serve does not watch its tokens' store")
		}
		secret, tok, err := elsewhere.Create(ctx, "alice", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := get(t, h, secret); code != http.StatusOK || body != "hello alice" {
			t.Fatalf("alice's token: %d %q", code, body)
		}
		if code, body := get(t, h, ""); code != http.StatusUnauthorized || !strings.Contains(body, "toolsift token create") {
			t.Errorf("no token: %d %q, want 401 saying how to get a token", code, body)
		}
		if err := elsewhere.Revoke(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		if code, _ := get(t, h, secret); code != http.StatusUnauthorized {
			t.Errorf("alice's token revoked elsewhere: %d, want 401 at once", code)
		}
		stop()
		peers.mu.Lock()
		defer peers.mu.Unlock()
		if len(peers.watchers) != 0 {
			t.Error("stop left the watch running")
		}
	})
	t.Run("shared token", func(t *testing.T) {
		h, authenticated, stop := identities{}.authenticate(ctx, log, ok, "s3cret")
		defer stop()
		if code, _ := get(t, h, "s3cret"); !authenticated || code != http.StatusOK {
			t.Errorf("the shared token: %d (authenticated %v), want 200", code, authenticated)
		}
		if code, body := get(t, h, "other"); code != http.StatusUnauthorized || !strings.Contains(body, "needs its bearer token") {
			t.Errorf("another token: %d %q, want 401 asking for the bearer token", code, body)
		}
	})
	t.Run("none", func(t *testing.T) {
		h, authenticated, stop := identities{}.authenticate(ctx, log, ok, "")
		defer stop()
		if code, _ := get(t, h, ""); authenticated || code != http.StatusOK {
			t.Errorf("no token on loopback: %d (authenticated %v), want 200 unauthenticated", code, authenticated)
		}
	})
}
