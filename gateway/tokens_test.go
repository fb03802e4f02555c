package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

func newDir(t testing.TB, path string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTokens: a token made for alice verifies as alice until revoked; the
// list shows it without its secret or hash; bad inputs are refused naming
// what is wrong.
func TestTokens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tokens := gateway.NewTokens(newDir(t, dir))
	secret, tok, err := tokens.Create(ctx, "alice", []string{"ops", "eng", "eng"}, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, gateway.TokenPrefix+tok.ID+"_") || len(secret) != 60 {
		t.Errorf("secret %q does not have the form tsk_%s_...", secret, tok.ID)
	}
	id, err := tokens.Verify(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(gateway.Identity{User: "alice", Teams: []string{"eng", "ops"}}, id); diff != "" {
		t.Errorf("Verify (-want +got):\n%s", diff)
	}
	bobSecret, _, err := tokens.Create(ctx, "bob@example.com", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	list, err := tokens.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != tok.ID && list[1].ID != tok.ID {
		t.Fatalf("List = %+v, want alice's and bob's tokens", list)
	}
	for _, tk := range list {
		if tk.User == "alice" {
			if diff := cmp.Diff(tok, tk); diff != "" {
				t.Errorf("listed token (-want +got):\n%s", diff)
			}
		}
	}
	// Neither the secret nor its hash in what List returns; the secret
	// nowhere in the store.
	b, _ := json.Marshal(list)
	for _, s := range []string{secret, bobSecret} {
		if hash := sha256Hex(s); strings.Contains(string(b), hash) || strings.Contains(string(b), s[len(s)-43:]) {
			t.Errorf("List shows a secret or its hash: %s", b)
		}
		grepTree(t, dir, s[len(s)-43:])
	}

	// Revoked: refused at once here, and gone from the list.
	if err := tokens.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(ctx, secret); !errors.Is(err, gateway.ErrUnknownToken) {
		t.Errorf("Verify of a revoked token: %v, want ErrUnknownToken", err)
	}
	if list, _ := tokens.List(ctx); len(list) != 1 || list[0].User != "bob@example.com" {
		t.Errorf("List after revoke = %+v, want bob's token only", list)
	}
	// Revoke takes the start of the secret too.
	if err := tokens.Revoke(ctx, bobSecret[:len(gateway.TokenPrefix)+12]); err != nil {
		t.Errorf("Revoke(tsk_ID): %v", err)
	}

	for _, c := range []struct {
		name              string
		user, tokenName   string
		teams             []string
		wantErrContaining string
	}{
		{"empty user", "", "", nil, "the user is empty"},
		{"user with a space", "alice smith", "", nil, `user "alice smith": byte ' ' is not allowed`},
		{"long user", strings.Repeat("a", 129), "", nil, "longer than 128 bytes"},
		{"bad team", "alice", "", []string{"eng/ops"}, `team "eng/ops": byte '/' is not allowed`},
		{"empty team", "alice", "", []string{""}, "the team is empty"},
		{"name with ESC", "alice", "lap\x1b[2Jtop", nil, "control characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := tokens.Create(ctx, c.user, c.teams, c.tokenName)
			if err == nil || !strings.Contains(err.Error(), c.wantErrContaining) {
				t.Errorf("Create: %v, want an error containing %q", err, c.wantErrContaining)
			}
		})
	}
	for _, id := range []string{"0123456789ab", "nope", ""} {
		if err := tokens.Revoke(ctx, id); !errors.Is(err, gateway.ErrUnknownToken) {
			t.Errorf("Revoke(%q): %v, want ErrUnknownToken", id, err)
		}
	}
	for _, s := range []string{"", "hello", secret + "x", strings.Replace(secret, "tsk_", "tsx_", 1), "tsk_0123456789ab_" + strings.Repeat("A", 43)} {
		_, err := tokens.Verify(ctx, s)
		if !errors.Is(err, gateway.ErrUnknownToken) {
			t.Errorf("Verify(%q): %v, want ErrUnknownToken", s, err)
		}
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("Verify's error holds the secret: %v", err)
		}
	}
}

// TestRevokedOnEveryReplica: two Gateways over one store folder stand in
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
	var replicas []*gateway.Tokens
	for range 2 {
		tokens := gateway.NewTokens(newDir(t, folder))
		tokens.SetClock(clock)
		gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{Tokens: tokens, Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gw.Close() })
		srv := httptest.NewServer(gw.Handler())
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
		replicas = append(replicas, tokens)
	}
	if gateway.TokenCacheTTL >= time.Second {
		t.Fatalf("TokenCacheTTL = %v: a revoked token would outlive a second on other replicas", gateway.TokenCacheTTL)
	}
	secret, tok, err := replicas[0].Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range urls {
		if resp, _ := post(t, u, "", "Bearer "+secret, "", initBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("replica %d: initialize with alice's token: %s", i+1, resp.Status)
		}
	}
	if err := replicas[0].Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, urls[0], "", "Bearer "+secret, "", initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replica 1 (revoked there): %s, want 401", resp.Status)
	}
	advance(gateway.TokenCacheTTL)
	resp, body := post(t, urls[1], "", "Bearer "+secret, "", initBody)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("replica 2, %v after the revocation: %s, want 401", gateway.TokenCacheTTL, resp.Status)
	}
	if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("401 without a WWW-Authenticate: Bearer header (%q)", got)
	}
	if strings.Contains(body, secret) {
		t.Errorf("the 401's body holds the token: %s", body)
	}
}

// TestTokenIdentifiesCaller: over HTTP, with a real go-sdk client, alice's
// token makes her calls hers: her log lines and her audit records name
// her; a request without a token, or with a wrong one, gets 401. The
// secret is in no log line, error or record.
func TestTokenIdentifiesCaller(t *testing.T) {
	ctx := context.Background()
	folder := t.TempDir()
	st := newDir(t, folder)
	tokens := gateway.NewTokens(st)
	secret, _, err := tokens.Create(ctx, "alice", []string{"eng"}, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	var buf testenv.Buffer
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Tokens: tokens, Audit: st,
		Logger:  slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			from := len(buf.String())
			c := httpClient(t, srv.URL, secret, version)
			c.search(t, "add two numbers", 1)
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 31337, "b": 2}}); isErr || text != "31339" {
				t.Errorf("call_tool(math__add) = %q (isError %v)", text, isErr)
			}
			lines := 0
			for line := range strings.SplitSeq(buf.String()[from:], "\n") {
				if strings.Contains(line, "msg=call ") || strings.Contains(line, "msg=search ") {
					lines++
					if !strings.Contains(line, "user=alice") {
						t.Errorf("log line without its user: %s", line)
					}
				}
			}
			if lines != 2 {
				t.Errorf("%d search and call lines, want 2:\n%s", lines, buf.String()[from:])
			}
		})
	}
	var recs []gateway.AuditRecord
	for rec, err := range gateway.AuditRecords(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2 (one per call): %+v", len(recs), recs)
	}
	for _, r := range recs {
		want := gateway.AuditRecord{Time: r.Time, User: "alice", Teams: []string{"eng"}, Tool: "math__add", Server: "math",
			UpstreamTool: "add", Duration: r.Duration, Outcome: "ok", Session: r.Session}
		if diff := cmp.Diff(want, r); diff != "" {
			t.Errorf("audit record (-want +got):\n%s", diff)
		}
		if r.Duration <= 0 || r.Time.IsZero() {
			t.Errorf("audit record without a time or duration: %+v", r)
		}
	}
	if recs[0].Session == "" || recs[1].Session != "" {
		t.Errorf("sessions %q, %q: want a tag for the 2025-11-25 session, none for 2026-07-28", recs[0].Session, recs[1].Session)
	}

	// Refused: no token, a wrong one, a made-up one of the right form.
	wrong := secret[:len(secret)-1] + map[bool]string{true: "B", false: "A"}[strings.HasSuffix(secret, "A")]
	for _, auth := range []string{"", "Bearer " + wrong, "Bearer nonsense", "Basic " + secret} {
		resp, body := post(t, srv.URL, "", auth, "", initBody)
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %.20q: %s (WWW-Authenticate %q), want 401 with a Bearer challenge", auth, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
		if !strings.Contains(body, "toolsift token create") {
			t.Errorf("the 401 does not say how to get a token: %s", body)
		}
	}
	if !strings.Contains(buf.String(), "msg=\"request refused\"") {
		t.Errorf("no log line for the refused requests:\n%s", buf.String())
	}
	// The secret (or the wrong one) reached no log line nor any file of
	// the store; the arguments reached no record.
	for _, s := range []string{secret, wrong, secret[len(secret)-43:]} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("the log holds a token:\n%s", buf.String())
		}
		grepTree(t, folder, s)
	}
	grepRecords(t, filepath.Join(folder, "audit"), "31337")
}

// httpClient connects a go-sdk client of version to url with the bearer
// token.
func httpClient(t *testing.T, url, token, version string) *client {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &client{ClientSession: cs, changed: make(chan struct{}, 16)}
}

// grepTree fails the test if a file under dir holds s.
func grepTree(t *testing.T, dir, s string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			t.Errorf("%s holds %.12q...", p, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTokenVerify: the cost of Verify on every request: warm (the
// cache holds the token: no store read) and cold (a store read per call:
// a Dir's file, or Memory).
func BenchmarkTokenVerify(b *testing.B) {
	ctx := context.Background()
	for _, kind := range []string{"dir", "memory"} {
		var st store.Store = store.NewMemory()
		if kind == "dir" {
			st = newDir(b, b.TempDir())
		}
		tokens := gateway.NewTokens(st)
		secret, _, err := tokens.Create(ctx, "alice", []string{"eng"}, "")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(kind+"/warm", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tokens.Verify(ctx, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kind+"/cold", func(b *testing.B) {
			// A clock past the cache's expiry at every call.
			var n time.Duration
			tokens.SetClock(func() time.Time { n += time.Hour; return time.Now().Add(n) })
			defer tokens.SetClock(time.Now)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tokens.Verify(ctx, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
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
	other := gateway.NewTokens(&watchedMemory{mem, hub})
	tokens := gateway.NewTokens(&watchedMemory{mem, hub})
	now := time.Now()
	tokens.SetClock(func() time.Time { return now }) // the cache never expires
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{Tokens: tokens, Toolset: toolsift.Options{NoSemantic: true, Store: store.NewMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(gw.Handler())
	defer srv.Close()
	select {
	case <-hub.watching:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the Gateway does not watch its tokens' store")
	}
	secret, tok, err := other.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, srv.URL, "", "Bearer "+secret, "", initBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize with alice's token: %s", resp.Status)
	}
	if err := other.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, srv.URL, "", "Bearer "+secret, "", initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after another process revoked it: %s, want 401 at once", resp.Status)
	}
	gw.Close()
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if len(hub.watchers) != 0 {
		t.Error("Close left the watch running")
	}
}

// TestSessionBoundToUser: with per-user tokens a session is its user's:
// another token of the same user (a refreshed credential) continues it,
// another user's token gets 403.
func TestSessionBoundToUser(t *testing.T) {
	ctx := context.Background()
	tokens := gateway.NewTokens(store.NewMemory())
	alice1, _, _ := tokens.Create(ctx, "alice", nil, "laptop")
	alice2, _, _ := tokens.Create(ctx, "alice", nil, "desktop")
	bob, _, err := tokens.Create(ctx, "bob", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ts := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{Tokens: tokens}))
	defer srv.Close()
	id := open(t, srv.URL, "Bearer "+alice1)
	for _, c := range []struct {
		who, secret string
		want        int
	}{{"alice's other token", alice2, http.StatusOK}, {"bob", bob, http.StatusForbidden}} {
		if resp, _ := post(t, srv.URL, id, "Bearer "+c.secret, "", listBody); resp.StatusCode != c.want {
			t.Errorf("%s on alice's session: %s, want %d", c.who, resp.Status, c.want)
		}
	}
}

// TestRevokedEndsStream: a session's event stream (GET), opened before
// its token was revoked, ends once the token is refused; the client's
// next request gets 401.
func TestRevokedEndsStream(t *testing.T) {
	ctx := context.Background()
	tokens := gateway.NewTokens(store.NewMemory())
	secret, tok, err := tokens.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ts := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{Tokens: tokens}))
	defer srv.Close()
	id := open(t, srv.URL, "Bearer "+secret)
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %s", resp.Status)
	}
	if err := tokens.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the event stream of a revoked token stays open")
	}
	if resp, _ := post(t, srv.URL, id, "Bearer "+secret, "", listBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after revocation: %s, want 401", resp.Status)
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
	secret, _, err := gateway.NewTokens(mem).Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf testenv.Buffer
	ts := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, &gateway.ProxyOptions{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{Tokens: gateway.NewTokens(brokenGets{mem})}))
	defer srv.Close()
	resp, body := post(t, srv.URL, "", "Bearer "+secret, "", initBody)
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
