package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

const hint = "toolbench login --config mcp.json"

// notesServer is a real go-sdk MCP server with two tools; write_note is
// the one a step-up test guards with a scope.
func notesServer() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "read_notes", Description: "Read the notes."},
		func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "notes: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "write_note", Description: "Write a note."},
		func(ctx context.Context, req *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + a.Text}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// newStore returns a Store of logins in the store.Dir of folder dir.
func newStore(t *testing.T, dir string) *oauth.Store {
	t.Helper()
	st, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := oauth.New(&oauth.Options{Store: st, LoginHint: hint})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connect opens a Hub on the one server "notes" with s as its Authorizer,
// and returns the server's status after Connect.
func connect(t *testing.T, s *oauth.Store, url string) (*upstream.Hub, upstream.ServerStatus) {
	t.Helper()
	cfg := &config.Config{Servers: map[string]config.Server{"notes": {URL: url, Type: "http"}}}
	h, err := upstream.NewHub(cfg, &upstream.HubOptions{Auth: s, Store: store.NewMemory(), MaxRestarts: -1, Timeout: testenv.WaitLimit()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.Connect(t.Context(), nil)
	return h, h.Status()[0]
}

func login(t *testing.T, s *oauth.Store, url string) *oauth.Grant {
	t.Helper()
	opened := 0
	g, err := s.Login(t.Context(), "notes", url, &oauth.LoginOptions{Open: func(ctx context.Context, authURL string) error {
		opened++
		go func() {
			if err := oauthtest.Browse(authURL); err != nil {
				t.Errorf("browser: %v", err)
			}
		}()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if opened != 1 {
		t.Fatalf("Open called %d times, want 1", opened)
	}
	return g
}

func wantLoginError(t *testing.T, err error, again bool, reason string) {
	t.Helper()
	if !errors.Is(err, oauth.ErrLoginRequired) {
		t.Fatalf("got %v, want a login error", err)
	}
	cmd := "log in with: " + hint + " notes"
	if again {
		cmd = "log in again: " + hint + " notes"
	}
	if msg := err.Error(); !strings.Contains(msg, cmd) || !strings.Contains(msg, reason) {
		t.Fatalf("error %q: want it to say %q and %q", msg, reason, cmd)
	}
}

func TestLoginFlow(t *testing.T) {
	srv := oauthtest.New(notesServer(), &oauthtest.Options{ToolScopes: map[string]string{"write_note": "notes:write"}})
	defer srv.Close()
	root := t.TempDir()
	dir := filepath.Join(root, "oauth") // the login files
	s := newStore(t, root)

	t.Run("before login", func(t *testing.T) {
		if tok, err := s.Token(t.Context(), "notes", srv.URL); tok != "" || err != nil {
			t.Fatalf("Token = %q, %v; want none yet", tok, err)
		}
		_, st := connect(t, s, srv.URL)
		if st.State != upstream.StateFailed {
			t.Fatalf("state %s, want failed", st.State)
		}
		wantLoginError(t, st.Err, false, "needs a login: not logged in")
		if c := srv.Counts(); c.Registrations+c.Authorizations != 0 {
			t.Fatalf("a Hub registered or authorized without a login: %+v", c)
		}
	})

	t.Run("login", func(t *testing.T) {
		g := login(t, s, srv.URL)
		if g.Issuer != srv.AS.URL || !g.Refreshable || g.Expiry.IsZero() {
			t.Fatalf("grant %+v", g)
		}
		if got := strings.Join(g.Scopes, " "); got != "mcp:tools offline_access" {
			t.Errorf("scopes %q, want the challenge's and offline_access", got)
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("folder %v %v, want 0700", fi.Mode(), err)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) != 1 {
			t.Fatalf("files %v, want one", files)
		}
		fi, _ = os.Stat(files[0])
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("file mode %v, want 0600", fi.Mode())
		}
		if strings.Contains(files[0], "localhost") || strings.Contains(files[0], "notes") {
			t.Errorf("file name %s shows the server", files[0])
		}
	})

	t.Run("list and call", func(t *testing.T) {
		h, st := connect(t, s, srv.URL)
		if st.State != upstream.StateReady || st.Tools != 2 {
			t.Fatalf("status %+v", st)
		}
		res, err := h.Call(t.Context(), "notes__read_notes", json.RawMessage(`{"text":"x"}`))
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	})

	t.Run("another process", func(t *testing.T) {
		before := srv.Counts()
		_, st := connect(t, newStore(t, root), srv.URL)
		if st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		if c := srv.Counts(); c.Refreshes != before.Refreshes || c.Authorizations != before.Authorizations {
			t.Fatalf("reusing a stored token asked the authorization server: %+v → %+v", before, c)
		}
	})

	t.Run("expired here", func(t *testing.T) {
		if err := oauth.SetExpiry(s, srv.URL, time.Now().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		before := srv.Counts()
		_, st := connect(t, newStore(t, root), srv.URL)
		c := srv.Counts()
		if st.State != upstream.StateReady || c.Refreshes != before.Refreshes+1 || c.Unauthorized != before.Unauthorized {
			t.Fatalf("status %+v; counts %+v → %+v: want one refresh before any request", st, before, c)
		}
	})

	t.Run("expired at the server", func(t *testing.T) {
		srv.ExpireAccessTokens()
		before := srv.Counts()
		_, st := connect(t, s, srv.URL)
		c := srv.Counts()
		if st.State != upstream.StateReady || c.Refreshes != before.Refreshes+1 || c.Unauthorized != before.Unauthorized+1 {
			t.Fatalf("status %+v; counts %+v → %+v: want one 401, one refresh", st, before, c)
		}
	})

	t.Run("step-up", func(t *testing.T) {
		h, st := connect(t, s, srv.URL)
		if st.State != upstream.StateReady {
			t.Fatalf("status %+v", st)
		}
		_, err := h.Call(t.Context(), "notes__write_note", json.RawMessage(`{"text":"x"}`))
		wantLoginError(t, err, true, `asks for scope "mcp:tools offline_access notes:write"`)
		g := login(t, s, srv.URL)
		if got := strings.Join(g.Scopes, " "); got != "mcp:tools offline_access notes:write" {
			t.Fatalf("scopes after step-up %q", got)
		}
		h, _ = connect(t, s, srv.URL)
		res, err := h.Call(t.Context(), "notes__write_note", json.RawMessage(`{"text":"x"}`))
		if err != nil || res.IsError {
			t.Fatalf("call after step-up: %v %+v", err, res)
		}
	})

	t.Run("revoked", func(t *testing.T) {
		srv.Revoke()
		before := srv.Counts()
		_, st := connect(t, s, srv.URL)
		wantLoginError(t, st.Err, true, "the stored login expired or was revoked (invalid_grant)")
		c := srv.Counts()
		if c.Refreshes != before.Refreshes || c.Unauthorized != before.Unauthorized+1 {
			t.Fatalf("counts %+v → %+v: want one 401 and one failed refresh, no loop", before, c)
		}
		// The next process knows without asking anyone.
		_, st = connect(t, newStore(t, root), srv.URL)
		wantLoginError(t, st.Err, true, "the stored login expired or was revoked")
		if c2 := srv.Counts(); c2 != c {
			t.Fatalf("a known-revoked login asked the network: %+v → %+v", c, c2)
		}
		login(t, s, srv.URL)
		if _, st = connect(t, s, srv.URL); st.State != upstream.StateReady {
			t.Fatalf("after a new login: %+v", st)
		}
	})

	t.Run("logout", func(t *testing.T) {
		for _, want := range []bool{true, false} {
			if got, err := s.Logout(t.Context(), srv.URL); got != want || err != nil {
				t.Fatalf("Logout = %v, %v; want %v", got, err, want)
			}
		}
		_, st := connect(t, s, srv.URL)
		wantLoginError(t, st.Err, false, "not logged in")
	})

	for i, r := range srv.Resources() {
		if r != srv.URL {
			t.Errorf("token request %d: resource %q, want %q", i, r, srv.URL)
		}
	}
	if b := srv.ASBearers(); len(b) > 0 {
		t.Errorf("the authorization server got bearer tokens: %d", len(b))
	}
}

// Two processes that find the same expired token refresh it once: the
// refresh token rotates, so a second refresh with the old one would fail.
func TestConcurrentRefresh(t *testing.T) {
	srv := oauthtest.New(notesServer(), nil)
	defer srv.Close()
	dir := t.TempDir()
	login(t, newStore(t, dir), srv.URL)
	if err := oauth.SetExpiry(newStore(t, dir), srv.URL, time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	toks := make([]string, 4)
	errs := make([]error, 4)
	for i := range toks {
		wg.Go(func() { toks[i], errs[i] = newStore(t, dir).Token(t.Context(), "notes", srv.URL) })
	}
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i] != toks[0] || toks[i] == "" {
			t.Fatalf("store %d: %q, %v; store 0: %q", i, toks[i], errs[i], toks[0])
		}
	}
	if c := srv.Counts(); c.Refreshes != 1 {
		t.Fatalf("%d refreshes, want 1", c.Refreshes)
	}
}

func TestLoginNeedsNone(t *testing.T) {
	open := notesServer()
	srv := oauthtest.New(open, nil)
	defer srv.Close()
	s := newStore(t, t.TempDir())
	// The AS's own URL serves no MCP and asks for nothing.
	_, err := s.Login(t.Context(), "plain", srv.AS.URL+"/register", &oauth.LoginOptions{Open: func(context.Context, string) error {
		t.Error("opened a browser for a server that needs no login")
		return nil
	}})
	if !errors.Is(err, oauth.ErrNoLoginNeeded) {
		t.Fatalf("login to a server that asks for none: %v, want ErrNoLoginNeeded", err)
	}
}

// A server whose tool list is cached is not started until a call needs it
// (lazy start): after a logout, that first call fails, naming the login.
func TestLazyServerNeedsLogin(t *testing.T) {
	srv := oauthtest.New(notesServer(), nil)
	t.Cleanup(srv.Close) // after the Hubs' cleanups
	s := newStore(t, t.TempDir())
	cache := t.TempDir()
	cacheStore, err := store.NewDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Servers: map[string]config.Server{"notes": {URL: srv.URL, Type: "http"}}}
	hub := func() *upstream.Hub {
		h, err := upstream.NewHub(cfg, &upstream.HubOptions{Auth: s, Store: cacheStore, Timeout: testenv.WaitLimit()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		if err := h.Connect(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		return h
	}
	login(t, s, srv.URL)
	if st := hub().Status()[0]; st.State != upstream.StateReady {
		t.Fatalf("first Hub: %+v", st)
	}
	tok, err := s.Token(t.Context(), "notes", srv.URL)
	if err != nil || tok == "" {
		t.Fatalf("Token: %q, %v", tok, err)
	}
	files := 0
	filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
			if data, _ := os.ReadFile(path); strings.Contains(string(data), tok) {
				t.Errorf("the cache file %s holds the access token", path)
			}
		}
		return nil
	})
	if files == 0 {
		t.Fatal("the Hub cached nothing")
	}
	if _, err := s.Logout(t.Context(), srv.URL); err != nil {
		t.Fatal(err)
	}
	h := hub()
	if st := h.Status()[0]; st.State != upstream.StateLazy {
		t.Fatalf("second Hub: state %s, want lazy (listed from the cache)", st.State)
	}
	_, err = h.Call(t.Context(), "notes__read_notes", json.RawMessage(`{}`))
	wantLoginError(t, err, false, "not logged in")
}

// A user who refuses in the browser gets the authorization server's
// reason, and nothing is stored.
func TestLoginDenied(t *testing.T) {
	srv := oauthtest.New(notesServer(), &oauthtest.Options{Deny: true})
	defer srv.Close()
	s := newStore(t, t.TempDir())
	_, err := s.Login(t.Context(), "notes", srv.URL, &oauth.LoginOptions{Open: func(ctx context.Context, authURL string) error {
		go oauthtest.Browse(authURL)
		return nil
	}})
	if err == nil || !strings.Contains(err.Error(), `login to server "notes": the authorization server refused: access_denied: the user said no`) {
		t.Fatalf("got %v", err)
	}
	if ok, err := s.LoggedIn(t.Context(), srv.URL); ok || err != nil {
		t.Fatalf("LoggedIn = %v, %v after a refusal", ok, err)
	}
}

// TestLoginFileBeforeStore: a login file as toolsift wrote it before the
// Store seam (os.UserConfigDir()/toolsift/oauth/<hash of the URL>.json)
// is the login of a Store over that folder's parent.
func TestLoginFileBeforeStore(t *testing.T) {
	root := t.TempDir()
	const url = "https://mcp.example.com/mcp"
	sum := sha256.Sum256([]byte(url))
	file := filepath.Join(root, "oauth", hex.EncodeToString(sum[:16])+".json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	rec := `{"version": 1, "server_url": "` + url + `", "resource": "` + url + `", "issuer": "https://auth.example.com",
		"token_endpoint": "https://auth.example.com/token", "auth_style": 0, "client_id": "c",
		"access_token": "at-1", "token_type": "Bearer", "logged_in": "2026-01-02T03:04:05Z"}`
	if err := os.WriteFile(file, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, root)
	if tok, err := s.Token(t.Context(), "remote", url); err != nil || tok != "at-1" {
		t.Fatalf("Token = %q, %v; want the stored at-1", tok, err)
	}
	if had, err := s.Logout(t.Context(), url); !had || err != nil {
		t.Fatalf("Logout = %v, %v", had, err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the login file after Logout: %v, want it removed", err)
	}
}
