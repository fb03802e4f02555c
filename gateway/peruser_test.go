package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/peruser"
	"github.com/toolsift/toolsift/internal/oauthtest"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// whoamiServer is an OAuth-protected MCP server (oauthtest: a real
// authorization server with refresh rotation) whose tool whoami answers
// the subject of the token that called it. Its sessions are stateful: the
// go-sdk binds each to its token's user.
func whoamiServer(t *testing.T) *oauthtest.Server {
	t.Helper()
	return whoamiServerWith(t, nil)
}

// whoamiServerWith is whoamiServer with its authorization server's
// options (oauthtest.Options.IDToken: it says who approved).
func whoamiServerWith(t *testing.T, opts *oauthtest.Options) *oauthtest.Server {
	t.Helper()
	newServer := func(*http.Request) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, &mcp.ServerOptions{
			SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
			CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Extra.TokenInfo.UserID}}}, nil
			},
		})
		mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Say whose token called."},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				who := "nobody"
				if req.Extra != nil && req.Extra.TokenInfo != nil {
					who = req.Extra.TokenInfo.UserID
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: who}}}, nil, nil
			})
		// A resource and a prompt that are the caller's: not to be
		// served to others through the catalog's session.
		srv.AddResource(&mcp.Resource{URI: "who://me", Name: "me"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "who://me", Text: req.Extra.TokenInfo.UserID}}}, nil
		})
		srv.AddPrompt(&mcp.Prompt{Name: "mine", Arguments: []*mcp.PromptArgument{{Name: "x"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}}, nil
		})
		return srv
	}
	as := oauthtest.New(mcp.NewStreamableHTTPHandler(newServer, nil), opts)
	t.Cleanup(as.Close)
	return as
}

// perUserGateway is a Gateway with "remote" per-user, served over HTTP
// behind asUser (X-Test-User names the request's user) at its PublicURL.
type perUserGateway struct {
	*gateway.Gateway
	URL string
	Log *testenv.Buffer
}

func openPerUser(t *testing.T, as *oauthtest.Server, st store.Store, key []byte) (*perUserGateway, error) {
	t.Helper()
	return openPerUserPolicy(t, as, st, key, nil)
}

// openPerUserPolicy is openPerUser under a policy (nil: none).
func openPerUserPolicy(t *testing.T, as *oauthtest.Server, st store.Store, key []byte, pol *config.Policy) (*perUserGateway, error) {
	t.Helper()
	return openPerUserOn(t, as, st, store.NewMemory(), key, pol)
}

// openPerUserOn is openPerUserPolicy with the logins in st and the
// toolset's store (the shared Hub's tool lists) in tst: a replica, when
// both are a store shared with another. Each of mods changes the config
// (before the per-user servers are checked against it) and the Gateway's
// options.
func openPerUserOn(t *testing.T, as *oauthtest.Server, st, tst store.Store, key []byte, pol *config.Policy, mods ...func(*config.Config, *gateway.Options)) (*perUserGateway, error) {
	t.Helper()
	var h atomic.Pointer[http.Handler]
	web := httptest.NewServer(asUser(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) })))
	t.Cleanup(web.Close)
	cfg := &config.Config{Servers: map[string]config.Server{"remote": {URL: as.URL, Type: "http"}}}
	var log testenv.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	gopts := &gateway.Options{
		Toolset:   toolsift.Options{NoSemantic: true, Store: tst, Logger: slog.New(slog.DiscardHandler)},
		Policy:    pol,
		Telemetry: gateway.Telemetry{Logger: logger},
	}
	for _, mod := range mods {
		mod(cfg, gopts)
	}
	logins, err := peruser.New(context.Background(), cfg, &peruser.Options{
		Servers: []string{"remote"}, Store: st, LoginKey: key, PublicURL: web.URL, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	gopts.PerUser = logins
	gw, err := gateway.Open(context.Background(), cfg, gopts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { gw.Close() })
	mux := http.NewServeMux()
	mux.Handle("/mcp", gw.Handler())
	mux.Handle("/", logins.Handler())
	var hh http.Handler = mux
	h.Store(&hh)
	return &perUserGateway{Gateway: gw, URL: web.URL, Log: &log}, nil
}

// browser is user's browser: every request names the user to the
// gateway (X-Test-User) and to the authorization page (UserHeader).
func browser(user string) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: userHeader{user, browserHeader{user, http.DefaultTransport}}}
}

// anonymousBrowser is user's browser that does not say who the user is to
// the gateway (the user's MCP client holds the credential), only to the
// authorization page.
func anonymousBrowser(user string) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Transport: browserHeader{user, http.DefaultTransport}}
}

type browserHeader struct {
	user string
	next http.RoundTripper
}

func (b browserHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(oauthtest.UserHeader, b.user)
	return b.next.RoundTrip(r)
}

// get fetches u with c and returns the status and body of the last
// response.
func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// login logs user in to "remote" through gw, as a person at a browser:
// the gateway's login page, the authorization server, the callback.
func (gw *perUserGateway) login(t *testing.T, user string) {
	t.Helper()
	if status, body := get(t, browser(user), gw.URL+"/login/remote"); status != http.StatusOK || !strings.Contains(body, "Logged in to remote as "+user) {
		t.Fatalf("%s's login: %d %s", user, status, body)
	}
}

// mcpClient is user's MCP client of gw, of the go-sdk's newest revision
// or of version.
func (gw *perUserGateway) mcpClient(t *testing.T, user string, version ...string) *client {
	t.Helper()
	hc := &http.Client{Transport: userHeader{user, http.DefaultTransport}}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	var opts *mcp.ClientSessionOptions
	if len(version) > 0 {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version[0]}
	}
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: gw.URL + "/mcp", HTTPClient: hc}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &client{ClientSession: cs, changed: make(chan struct{}, 16)}
}

func (c *client) whoami(t *testing.T) (string, bool) {
	t.Helper()
	return c.call(t, "call_tool", map[string]any{"name": "remote__whoami"})
}

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, peruser.LoginKeySize)
	rand.Read(k)
	return k
}

// TestPerUserLogins: users A and B log in to a per-user server through
// the gateway's pages; each one's calls carry that user's own token (the
// server answers its subject); a user without a login is told the page
// to open; the first login lists the server's tools for the catalog.
func TestPerUserLogins(t *testing.T) {
	as := whoamiServer(t)
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingStore{Store: st}
	gw, err := openPerUser(t, as, counted, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := gw.Toolset().Get("remote__whoami"); ok {
		t.Fatal("remote__whoami is in the catalog before anyone logged in")
	}
	alice, bob, carol := gw.mcpClient(t, "alice"), gw.mcpClient(t, "bob"), gw.mcpClient(t, "carol")

	// Before any login, a call is told where to log in.
	if text, isErr := alice.whoami(t); !isErr || !strings.Contains(text, gw.URL+"/login/remote") {
		t.Fatalf("alice's call before her login = %q (isError %v), want the login URL", text, isErr)
	}

	gw.login(t, "alice")
	if _, ok := gw.Toolset().Get("remote__whoami"); !ok {
		t.Fatal("remote__whoami is not in the catalog after the first login")
	}
	gw.login(t, "bob")
	for _, c := range []struct {
		who    string
		client *client
	}{{"alice", alice}, {"bob", bob}, {"alice", alice}} {
		if text, isErr := c.client.whoami(t); isErr || text != c.who {
			t.Errorf("%s's call = %q (isError %v), want %q", c.who, text, isErr, c.who)
		}
	}
	// A user's token is read from the store once, not at every request.
	reads := counted.gets.Load()
	if text, isErr := alice.whoami(t); isErr || text != "alice" {
		t.Errorf("alice's call = %q (isError %v)", text, isErr)
	}
	if n := counted.gets.Load() - reads; n != 0 {
		t.Errorf("alice's call read the store %d times, want 0 (her token is held)", n)
	}
	// Found by search and called by name on bob's session.
	bob.search(t, "whose token called", 1)
	if text, isErr := bob.call(t, "remote__whoami", map[string]any{}); isErr || text != "bob" {
		t.Errorf("bob's call of the found tool = %q (isError %v), want bob", text, isErr)
	}
	// Carol never logged in: the login URL, never another's token.
	if text, isErr := carol.whoami(t); !isErr || !strings.Contains(text, gw.URL+"/login/remote") || strings.Contains(text, "alice") {
		t.Errorf("carol's call = %q (isError %v), want the login URL", text, isErr)
	}
	if got := as.ASBearers(); len(got) != 0 {
		t.Errorf("the authorization server got %d bearer tokens", len(got))
	}

	// The server's resources and prompts are not served: the catalog's
	// session is alice's. (A client of 2025-11-25: subscriptions are
	// requests of their own.)
	ctx := context.Background()
	bob = gw.mcpClient(t, "bob", "2025-11-25")
	if text, isErr := bob.whoami(t); isErr || text != "bob" {
		t.Errorf("bob's call on a 2025-11-25 session = %q (isError %v), want bob", text, isErr)
	}
	if res, err := bob.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
		t.Errorf("bob lists the per-user server's resources: %v", res.Resources[0].URI)
	}
	if res, err := bob.ListPrompts(ctx, nil); err == nil && len(res.Prompts) > 0 {
		t.Errorf("bob lists the per-user server's prompts: %v", res.Prompts[0].Name)
	}
	if res, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "who://me"}); err == nil {
		t.Errorf("bob read the per-user server's resource: %+v", res.Contents[0])
	}
	if err := bob.Subscribe(ctx, &mcp.SubscribeParams{URI: "who://me"}); err == nil {
		t.Error("bob subscribed to the per-user server's resource")
	}
	if res, err := bob.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "remote__mine"}, Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil {
		t.Errorf("bob completed the per-user server's prompt: %+v", res)
	}

	// Revoked at the authorization server: the refresh is refused, and
	// alice is sent to log in again; bob's refused login is his own.
	as.Revoke()
	if text, isErr := alice.whoami(t); !isErr || !strings.Contains(text, "expired or was revoked") || !strings.Contains(text, gw.URL+"/login/remote?ticket=") {
		t.Errorf("alice's call after the revocation = %q (isError %v), want a login link", text, isErr)
	}
	gw.login(t, "alice")
	if text, isErr := alice.whoami(t); isErr || text != "alice" {
		t.Errorf("alice's call after logging in again = %q (isError %v)", text, isErr)
	}

	// Nothing in the store names a user or a URL, and no token is there
	// in the clear.
	err = filepath.WalkDir(st.Path(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		b, isJSON := withoutCiphertext(b)
		for _, secret := range []string{"alice", "bob", "access_token", "refresh_token", "localhost"} {
			// Three bytes occur by chance in a few kilobytes of
			// binary (vectors): a short name is looked for in
			// JSON only.
			if !isJSON && len(secret) < 5 {
				continue
			}
			if bytes.Contains(b, []byte(secret)) || strings.Contains(path, secret) {
				t.Errorf("%s holds %q", path, secret)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPerUserLoginState: the state of a login is its user's, used once.
func TestPerUserLoginState(t *testing.T) {
	as := whoamiServer(t)
	st := store.NewMemory()
	gw, err := openPerUser(t, as, st, newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	// Alice's browser goes to the authorization server and back, stopping
	// before the callback.
	noFollow := func(user string) *http.Client {
		c := browser(user)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	location := func(c *http.Client, u string) string {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("GET %s: %s, want a redirect", u, resp.Status)
		}
		return resp.Header.Get("Location")
	}
	callback := location(noFollow("alice"), location(noFollow("alice"), gw.URL+"/login/remote"))
	if !strings.HasPrefix(callback, gw.URL+"/oauth/callback?") {
		t.Fatalf("the authorization server sent the browser to %s", callback)
	}
	if status, body := get(t, browser("bob"), callback); status != http.StatusForbidden {
		t.Errorf("bob's use of alice's state: %d %s, want 403", status, body)
	}
	if status, body := get(t, browser(""), callback); status != http.StatusForbidden {
		t.Errorf("an anonymous use of alice's state from another browser: %d %s, want 403", status, body)
	}
	if status, body := get(t, browser("alice"), callback); status != http.StatusOK {
		t.Fatalf("alice's callback: %d %s", status, body)
	}
	if status, body := get(t, browser("alice"), callback); status != http.StatusBadRequest || !strings.Contains(body, "already used") {
		t.Errorf("alice's callback replayed: %d %s, want 400", status, body)
	}
	if status, _ := get(t, browser("alice"), gw.URL+"/oauth/callback?state=forged&code=x"); status != http.StatusBadRequest {
		t.Errorf("a forged state: %d, want 400", status)
	}
	if status, _ := get(t, browser("alice"), gw.URL+"/login/nope"); status != http.StatusNotFound {
		t.Errorf("login to an unknown server: %d, want 404", status)
	}
	if c := as.Counts(); c.CodeExchanges != 1 {
		t.Errorf("%d code exchanges, want 1", c.CodeExchanges)
	}
	if text, isErr := gw.mcpClient(t, "alice").whoami(t); isErr || text != "alice" {
		t.Errorf("alice's call = %q (isError %v)", text, isErr)
	}
}

// TestPerUserWrongKey: a gateway given another key refuses the store's
// logins, naming both key ids, and leaves every record as it was.
func TestPerUserWrongKey(t *testing.T) {
	as := whoamiServer(t)
	dir := t.TempDir()
	st, err := store.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	gw, err := openPerUser(t, as, st, key)
	if err != nil {
		t.Fatal(err)
	}
	gw.login(t, "alice")
	gw.Close()
	before := snapshot(t, dir)
	if len(before) < 2 {
		t.Fatalf("the store holds %d files after a login, want a login and the catalog's", len(before))
	}

	other := newKey(t)
	_, err = openPerUser(t, as, st, other)
	if !errors.Is(err, peruser.ErrLoginKey) || !strings.Contains(err.Error(), peruser.LoginKeyID(key)) || !strings.Contains(err.Error(), peruser.LoginKeyID(other)) {
		t.Fatalf("Open with another key: %v, want ErrLoginKey naming both key ids", err)
	}
	t.Logf("Open with another key: %v", err)
	after := snapshot(t, dir)
	if len(after) != len(before) {
		t.Fatalf("%d files before, %d after", len(before), len(after))
	}
	for path, b := range before {
		if !bytes.Equal(after[path], b) {
			t.Errorf("%s changed", path)
		}
	}
	// The right key reads them again.
	gw, err = openPerUser(t, as, st, key)
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := gw.mcpClient(t, "alice").whoami(t); isErr || text != "alice" {
		t.Errorf("alice's call with the right key = %q (isError %v)", text, isErr)
	}
}

// snapshot reads every file under dir but the locks.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "/.locks/") {
			return err
		}
		out[path], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPerUserRefreshOnce: two gateways (replicas) sharing one store find
// alice's access token expired at once; the login is refreshed once (the
// refresh token rotates, so a second refresh would fail) and both calls
// carry alice's new token.
func TestPerUserRefreshOnce(t *testing.T) {
	as := whoamiServer(t)
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	gw1, err := openPerUser(t, as, st, key)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := store.NewDir(st.Path()) // another process's handle
	if err != nil {
		t.Fatal(err)
	}
	gw2, err := openPerUser(t, as, st2, key)
	if err != nil {
		t.Fatal(err)
	}
	// Alice logs in through replica 1; replica 2, open since before, has
	// no catalog of the server until her first call through it.
	gw1.login(t, "alice")
	c1, c2 := gw1.mcpClient(t, "alice"), gw2.mcpClient(t, "alice")
	if _, ok := gw2.Toolset().Get("remote__whoami"); ok {
		t.Fatal("replica 2 lists remote__whoami before anyone logged in through it")
	}
	for i, c := range []*client{c1, c2} {
		if text, isErr := c.whoami(t); isErr || text != "alice" {
			t.Fatalf("alice's call through replica %d = %q (isError %v)", i+1, text, isErr)
		}
	}
	if _, ok := gw2.Toolset().Get("remote__whoami"); !ok {
		t.Fatal("replica 2 does not list remote__whoami after alice's call through it")
	}
	as.ExpireAccessTokens()
	before := as.Counts()
	var wg sync.WaitGroup
	texts := make([]string, 2)
	errs := make([]bool, 2)
	for i, c := range []*client{c1, c2} {
		wg.Go(func() {
			res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "remote__whoami"}})
			if err != nil {
				texts[i], errs[i] = err.Error(), true
				return
			}
			errs[i] = res.IsError
			for _, ct := range res.Content {
				if tc, ok := ct.(*mcp.TextContent); ok {
					texts[i] += tc.Text
				}
			}
		})
	}
	wg.Wait()
	for i := range texts {
		if errs[i] || texts[i] != "alice" {
			t.Errorf("alice's call through replica %d = %q (isError %v), want alice", i+1, texts[i], errs[i])
		}
	}
	t.Logf("counts before %+v, after %+v", before, as.Counts())
	if c := as.Counts(); c.Refreshes != before.Refreshes+1 {
		t.Errorf("%d refreshes, want 1 across both replicas", c.Refreshes-before.Refreshes)
	}
}

// TestPerUserLoginLink: a user whose browser cannot say who the user is
// logs in through the link the call without a login answered with: its
// ticket names the user, once; the callback is the browser's that started
// the login.
func TestPerUserLoginLink(t *testing.T) {
	as := whoamiServer(t)
	gw, err := openPerUser(t, as, store.NewMemory(), newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	carol := gw.mcpClient(t, "carol")
	text, isErr := carol.whoami(t)
	link := regexp.MustCompile(regexp.QuoteMeta(gw.URL) + `/login/remote\?ticket=\S+`).FindString(text)
	if !isErr || link == "" {
		t.Fatalf("carol's call without a login = %q (isError %v), want a login link with a ticket", text, isErr)
	}
	// Calling again before she logged in gives the same link.
	if again, _ := carol.whoami(t); !strings.Contains(again, link) {
		t.Errorf("carol's second call = %q, want the same link %s", again, link)
	}
	// Without the ticket, the page does not know her.
	if status, _ := get(t, anonymousBrowser("carol"), gw.URL+"/login/remote"); status != http.StatusUnauthorized {
		t.Errorf("the login page without a ticket or a user: %d, want 401", status)
	}

	// Her browser starts the login; another browser cannot finish it.
	b := anonymousBrowser("carol")
	b.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), gw.URL+"/oauth/callback") {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := b.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(callback, gw.URL+"/oauth/callback?") {
		t.Fatalf("carol's login link led to %s %s", resp.Status, callback)
	}
	if status, _ := get(t, anonymousBrowser("mallory"), callback); status != http.StatusForbidden {
		t.Errorf("another browser's use of carol's callback: %d, want 403", status)
	}
	b.CheckRedirect = nil
	if status, body := get(t, b, callback); status != http.StatusOK || !strings.Contains(body, "as carol") {
		t.Fatalf("carol's callback: %d %s", status, body)
	}
	if text, isErr := carol.whoami(t); isErr || text != "carol" {
		t.Errorf("carol's call after her login = %q (isError %v)", text, isErr)
	}
	// The ticket was used.
	if status, _ := get(t, anonymousBrowser("carol"), link); status != http.StatusBadRequest {
		t.Errorf("the login link used again: %d, want 400", status)
	}
	u, _ := url.Parse(link)
	tk := u.Query().Get("ticket")
	if tk == "" {
		t.Errorf("link %s has no ticket", link)
	}
	// The log says a login was needed, without the ticket.
	if log := gw.Log.String(); !strings.Contains(log, "outcome=login-needed") || strings.Contains(log, tk) {
		t.Errorf("the log lacks the call's outcome, or shows its ticket:\n%s", log)
	}
}

// TestPerUserStepUp: a tool that needs a scope the login lacks (403
// insufficient_scope) sends the user to log in again, and that login asks
// for the scope: the call then goes through.
func TestPerUserStepUp(t *testing.T) {
	newServer := func(*http.Request) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Say whose token called."},
			func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Extra.TokenInfo.UserID}}}, nil, nil
			})
		return srv
	}
	as := oauthtest.New(mcp.NewStreamableHTTPHandler(newServer, nil), &oauthtest.Options{ToolScopes: map[string]string{"whoami": "who:read"}})
	t.Cleanup(as.Close)
	gw, err := openPerUser(t, as, store.NewMemory(), newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	gw.login(t, "alice")
	alice := gw.mcpClient(t, "alice")
	if text, isErr := alice.whoami(t); !isErr || !strings.Contains(text, `who:read`) || !strings.Contains(text, "/login/remote?ticket=") {
		t.Fatalf("alice's call without the scope = %q (isError %v), want a login link naming the scope", text, isErr)
	}
	gw.login(t, "alice")
	if text, isErr := alice.whoami(t); isErr || text != "alice" {
		t.Fatalf("alice's call after the step-up login = %q (isError %v)", text, isErr)
	}
}

// countingStore counts the reads of a store.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// withoutCiphertext returns a store value as the walk in TestPerUserLogins
// checks it: a sealed login record without its nonce and ciphertext
// (random bytes, in base64, can spell "bob"; AES-GCM is what keeps the
// plaintext out of them), anything else whole; and whether it is JSON.
func withoutCiphertext(b []byte) ([]byte, bool) {
	var rec map[string]json.RawMessage
	if json.Unmarshal(b, &rec) != nil {
		return b, json.Valid(b)
	}
	if _, ok := rec["sealed"]; !ok {
		return b, true
	}
	delete(rec, "sealed")
	delete(rec, "nonce")
	out, err := json.Marshal(rec)
	if err != nil {
		return b, true
	}
	return out, true
}
