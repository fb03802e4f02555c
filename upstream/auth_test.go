package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// tokens is an application's own Authorizer: a token it hands out, and
// what to do when a server refuses it.
type tokens struct {
	mu           sync.Mutex
	token        string
	next         string // Unauthorized switches to it; "" keeps the token
	err          error  // Unauthorized's answer when set
	unauthorized int
}

func (a *tokens) Token(ctx context.Context, server, serverURL string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.token, nil
}

func (a *tokens) Unauthorized(ctx context.Context, server, serverURL string, resp *http.Response) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unauthorized++
	if a.next != "" {
		a.token = a.next
	}
	return a.err
}

// bearerServer serves a go-sdk server to requests with "Bearer want" and
// answers 401 otherwise; seen collects the Authorization headers.
type bearerServer struct {
	*httptest.Server
	mu   sync.Mutex
	want string
	seen []string
}

func newBearerServer(t *testing.T, want string) *bearerServer {
	b := &bearerServer{want: want}
	// Stateless: no session outlives a request, so none is left running
	// after the test whichever way its client went (redirects, refusals).
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer("remote", nil, "echo") }, &mcp.StreamableHTTPOptions{Stateless: true})
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.seen = append(b.seen, r.Header.Get("Authorization"))
		ok := b.want == "" || r.Header.Get("Authorization") == "Bearer "+b.want
		b.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *bearerServer) headers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

func authHub(t *testing.T, url string, auth upstream.Authorizer, headers map[string]string) upstream.ServerStatus {
	t.Helper()
	cfg := &config.Config{Servers: map[string]config.Server{"remote": {URL: url, Type: "http", Headers: headers}}}
	hub := startHub(t, cfg, &upstream.HubOptions{Auth: auth, MaxRestarts: -1, Store: store.NewMemory()}, nil)
	return statusOf(t, hub, "remote")
}

func TestAuthorizer(t *testing.T) {
	t.Run("token", func(t *testing.T) {
		srv := newBearerServer(t, "good")
		a := &tokens{token: "good"}
		if st := authHub(t, srv.URL+"/mcp", a, nil); st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		for _, h := range srv.headers() {
			if h != "Bearer good" {
				t.Fatalf("request with Authorization %q", h)
			}
		}
		if a.unauthorized != 0 {
			t.Fatalf("Unauthorized called %d times", a.unauthorized)
		}
	})

	t.Run("refused then renewed", func(t *testing.T) {
		srv := newBearerServer(t, "good")
		a := &tokens{token: "stale", next: "good"}
		if st := authHub(t, srv.URL+"/mcp", a, nil); st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		if got := srv.headers(); len(got) < 2 || got[0] != "Bearer stale" || got[1] != "Bearer good" || a.unauthorized != 1 {
			t.Fatalf("headers %q, Unauthorized %d: want stale, then good after one Unauthorized", got, a.unauthorized)
		}
	})

	t.Run("refused twice", func(t *testing.T) {
		// An Authorizer that claims a new token that is refused too: one
		// retry, then the server's answer; no loop.
		srv := newBearerServer(t, "good")
		a := &tokens{token: "stale", next: "also-stale"}
		st := authHub(t, srv.URL+"/mcp", a, nil)
		if st.State != upstream.StateFailed || len(srv.headers()) != 2 || a.unauthorized != 2 {
			t.Fatalf("state %s, %d requests, Unauthorized %d: want failed after 2 requests and 2 calls", st.State, len(srv.headers()), a.unauthorized)
		}
	})

	t.Run("login needed", func(t *testing.T) {
		srv := newBearerServer(t, "good")
		errLogin := errors.New(`server "remote" needs a login: run: app login remote`)
		a := &tokens{err: errLogin}
		st := authHub(t, srv.URL+"/mcp", a, nil)
		if st.State != upstream.StateFailed || !errors.Is(st.Err, errLogin) || len(srv.headers()) != 1 {
			t.Fatalf("status %v %v after %d requests: want failed with the Authorizer's error after 1", st.State, st.Err, len(srv.headers()))
		}
		if got := srv.headers()[0]; got != "" {
			t.Fatalf("sent Authorization %q with no token", got)
		}
	})

	t.Run("other origin", func(t *testing.T) {
		// The server's URL redirects elsewhere: the token stays home.
		other := newBearerServer(t, "")
		home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
		}))
		defer home.Close()
		a := &tokens{token: "secret-token"}
		st := authHub(t, home.URL+"/mcp", a, nil)
		if st.State != upstream.StateFailed || !errors.Is(st.Err, upstream.ErrForeignOrigin) {
			t.Fatalf("status %+v: want failed, refusing the redirect to another origin", st)
		}
		if n := len(other.headers()); n != 0 {
			t.Fatalf("the other origin got %d requests", n)
		}
	})

	t.Run("own header", func(t *testing.T) {
		srv := newBearerServer(t, "static")
		a := &tokens{token: "good"}
		if st := authHub(t, srv.URL+"/mcp", a, map[string]string{"authorization": "Bearer static"}); st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		if a.unauthorized != 0 || slices.Contains(srv.headers(), "Bearer good") {
			t.Fatal("the Authorizer was used for a server with its own Authorization header")
		}
	})
}

// TestAuthorizerDiscover: a server of MCP 2026-07-28 only that needs a
// login answers server/discover with 401 and a fallback initialize with
// 400 (no protocol header): the Hub reports the Authorizer's error (the
// login to run), which the SDK's fallback would have dropped.
func TestAuthorizerDiscover(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") == "" {
			http.Error(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Missing MCP-Protocol-Version header"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	errLogin := errors.New(`server "remote" needs a login: run: app login remote`)
	cfg := &config.Config{Servers: map[string]config.Server{"remote": {URL: srv.URL + "/mcp", Type: "http", ProtocolVersion: "latest"}}}
	hub := startHub(t, cfg, &upstream.HubOptions{Auth: &tokens{err: errLogin}, MaxRestarts: -1, Store: store.NewMemory()}, nil)
	if st := statusOf(t, hub, "remote"); st.State != upstream.StateFailed || !errors.Is(st.Err, errLogin) {
		t.Fatalf("status %v %v: want failed with the Authorizer's error", st.State, st.Err)
	}
}
