package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/peruser"
	"github.com/toolsift/toolsift/internal/npmtest"
	"github.com/toolsift/toolsift/internal/pgtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/store/postgres"
	"github.com/toolsift/toolsift/upstream"
)

// tokenLog records, from the gateways' side of the wire, the access tokens
// the authorization server issued (in order) and the token each
// tools/call carried.
type tokenLog struct {
	next http.RoundTripper

	mu     sync.Mutex
	issued []string
	calls  []string
}

func (l *tokenLog) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
		l.mu.Lock()
		l.calls = append(l.calls, strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
		l.mu.Unlock()
	}
	resp, err := l.next.RoundTrip(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/token") {
		return resp, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(b, &tok) == nil && tok.AccessToken != "" {
		l.mu.Lock()
		l.issued = append(l.issued, tok.AccessToken)
		l.mu.Unlock()
	}
	return resp, nil
}

func (l *tokenLog) last() (issued []string, lastCall string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) > 0 {
		lastCall = l.calls[len(l.calls)-1]
	}
	return append([]string(nil), l.issued...), lastCall
}

// TestPerUserTypeScriptServer: the TypeScript SDK's example server with
// its own authorization server (dynamic registration, strict resource
// checks), per-user behind two gateways sharing one store: alice logs in
// through replica 1, and her calls through either replica carry the token
// her login got; bob's carry his; carol is sent to log in. The store is a
// folder, or PostgreSQL (each gateway its own connections, as replicas).
func TestPerUserTypeScriptServer(t *testing.T) {
	for _, kind := range []string{"dir", "postgres"} {
		t.Run(kind, func(t *testing.T) { testPerUserTypeScriptServer(t, kind) })
	}
}

func testPerUserTypeScriptServer(t *testing.T, kind string) {
	npm := npmtest.Dir(t, "../upstream/testdata/npm")
	sdkDir := filepath.Join(npm, "node_modules", "@modelcontextprotocol", "sdk")
	ts := npmtest.StartTSOAuth(t, sdkDir, "--oauth-strict")
	out := ts.Out

	log := &tokenLog{next: http.DefaultTransport}
	hc := &http.Client{Transport: log}
	cfg := &config.Config{Servers: map[string]config.Server{"ts": {URL: ts.URL(), Type: "http"}}}
	dir := t.TempDir()
	var pg string
	if kind == "postgres" {
		pg = pgtest.Start(t)
	}
	key := newKey(t)
	open := func() *perUserGateway {
		var st store.Store
		var err error
		if kind == "postgres" {
			st, err = postgres.Open(context.Background(), pg, nil)
		} else {
			st, err = store.NewDir(dir)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		var h atomic.Pointer[http.Handler]
		web := httptest.NewServer(asUser(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) })))
		t.Cleanup(web.Close)
		var glog testenv.Buffer
		logger := slog.New(slog.NewTextHandler(&glog, &slog.HandlerOptions{Level: slog.LevelDebug}))
		logins, err := peruser.New(context.Background(), cfg, &peruser.Options{
			Servers: []string{"ts"}, Store: st, LoginKey: key, PublicURL: web.URL, Logger: logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
			Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory(), Logger: slog.New(slog.DiscardHandler)},
			Hub:       upstream.HubOptions{HTTPClient: hc},
			PerUser:   logins,
			Telemetry: gateway.Telemetry{Logger: logger},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gw.Close() })
		mux := http.NewServeMux()
		mux.Handle("/mcp", gw.Handler())
		mux.Handle("/", logins.Handler())
		var hh http.Handler = mux
		h.Store(&hh)
		return &perUserGateway{Gateway: gw, URL: web.URL, Log: &glog}
	}
	gw1, gw2 := open(), open()

	greet := func(gw *perUserGateway, user string) (string, bool) {
		t.Helper()
		return gw.mcpClient(t, user).call(t, "call_tool", map[string]any{"name": "ts__greet", "arguments": map[string]any{"name": user}})
	}
	if status, body := get(t, browser("alice"), gw1.URL+"/login/ts"); status != http.StatusOK {
		t.Fatalf("alice's login through replica 1: %d %s\n%s", status, body, out.String())
	}
	if status, body := get(t, browser("bob"), gw2.URL+"/login/ts"); status != http.StatusOK {
		t.Fatalf("bob's login through replica 2: %d %s", status, body)
	}
	issued, _ := log.last()
	if len(issued) != 2 || issued[0] == issued[1] {
		t.Fatalf("the authorization server issued %d tokens, want 2 different ones (alice's, bob's)", len(issued))
	}
	for _, c := range []struct {
		gw    *perUserGateway
		user  string
		token string
	}{{gw2, "alice", issued[0]}, {gw1, "alice", issued[0]}, {gw1, "bob", issued[1]}, {gw2, "bob", issued[1]}} {
		text, isErr := greet(c.gw, c.user)
		if isErr || text != "Hello, "+c.user+"!" {
			t.Errorf("%s's greet = %q (isError %v)", c.user, text, isErr)
		}
		if _, sent := log.last(); sent != c.token {
			t.Errorf("%s's tools/call did not carry the token of %s's login", c.user, c.user)
		}
	}
	if text, isErr := greet(gw2, "carol"); !isErr || !strings.Contains(text, gw2.URL+"/login/ts?ticket=") {
		t.Errorf("carol's greet = %q (isError %v), want a login link", text, isErr)
	}
	// No token reaches a log.
	for i, gw := range []*perUserGateway{gw1, gw2} {
		for _, tok := range issued {
			if strings.Contains(gw.Log.String(), tok) {
				t.Errorf("replica %d's log shows a token", i+1)
			}
		}
	}
}
