package peruser

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/store"
)

// LoginKeySize is the length of Options.LoginKey: an AES-256 key.
const LoginKeySize = 32

// ErrLoginKey is wrapped by the errors about per-user login records that
// the configured Options.LoginKey cannot open: sealed with another key
// (the error names both key ids) or damaged. Such records are neither
// used nor overwritten.
var ErrLoginKey = errors.New("peruser: per-user logins sealed with another key")

// LoginKeyID returns the id of a login key: a hash of it, which names the
// key in each record it seals and in errors, and tells nothing of the key.
func LoginKeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("toolsift login key id\x00"), key...))
	return "k" + hex.EncodeToString(sum[:8])
}

// The store keys of per-user logins (docs/serve.md). Users, issuers,
// resources and states appear hashed: a user name or a URL could carry a
// secret, and a key is visible to whoever lists the store.
const (
	loginsPrefix  = "userlogins/"
	catalogPrefix = loginsPrefix + "catalog/"  // per server URL: whose login lists its tools
	pendingPrefix = loginsPrefix + "pending/"  // per state: a login between its start and the callback
	ticketPrefix  = loginsPrefix + "tickets/"  // per ticket: a login page's link for one user
	subjectPrefix = loginsPrefix + "subjects/" // per (issuer, subject): whose login an account is
)

func hashHex(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// userPrefix holds the logins of one user.
func userPrefix(user string) string { return loginsPrefix + "u/" + hashHex(user) + "/" }

// loginKey is the record of one user's login at one authorization
// server for one resource.
func loginKey(user, issuer, resource string) string {
	return userPrefix(user) + hashHex(issuer, resource) + ".json"
}

func catalogKey(serverURL string) string { return catalogPrefix + hashHex(serverURL) + ".json" }
func subjectKey(issuer, subject string) string {
	return subjectPrefix + hashHex(issuer, subject) + ".json"
}
func pendingKey(state string) string { return pendingPrefix + hashHex(state) + ".json" }
func ticketKey(ticket string) string { return ticketPrefix + hashHex(ticket) + ".json" }

// envelope is a sealed record as stored: AES-256-GCM under the key KeyID
// names, with the record's store key as additional data (a record moved
// under another key, another user's, fails to open).
type envelope struct {
	Version int    `json:"v"`
	KeyID   string `json:"kid"`
	Nonce   []byte `json:"nonce"`
	Sealed  []byte `json:"sealed"`
}

// sealer seals and opens records with one key.
type sealer struct {
	aead cipher.AEAD
	kid  string
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != LoginKeySize {
		return nil, fmt.Errorf("%w: peruser: LoginKey has %d bytes, want %d (AES-256)", gateway.ErrOptions, len(key), LoginKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: peruser: LoginKey: %v", gateway.ErrOptions, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("%w: peruser: LoginKey: %v", gateway.ErrOptions, err)
	}
	return &sealer{aead: aead, kid: LoginKeyID(key)}, nil
}

func (s *sealer) seal(key string, v any) ([]byte, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return json.Marshal(envelope{Version: 1, KeyID: s.kid, Nonce: nonce, Sealed: s.aead.Seal(nil, nonce, plain, []byte(key))})
}

// keyIDOf returns the key id a stored record names, without opening it.
func keyIDOf(b []byte) (string, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil || e.Version != 1 || e.KeyID == "" {
		return "", errors.New("not a sealed login record")
	}
	return e.KeyID, nil
}

// open opens the record b stored under key into v. A record of another
// key, or one that fails authentication, is an error wrapping ErrLoginKey
// that names the record's key and what to do; nothing is changed.
func (s *sealer) open(key string, b []byte, v any) error {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil || e.Version != 1 {
		return fmt.Errorf("%w: %s is not a sealed login record: left as it is", ErrLoginKey, key)
	}
	if e.KeyID != s.kid {
		return fmt.Errorf("%w: %s was sealed with key id %s, the configured login key is %s: give the key it was sealed with (--login-key-file, $TOOLSIFT_LOGIN_KEY); the records are left as they are", ErrLoginKey, key, e.KeyID, s.kid)
	}
	plain, err := s.aead.Open(nil, e.Nonce, e.Sealed, []byte(key))
	if err != nil {
		return fmt.Errorf("%w: %s names key id %s but fails authentication (damaged, or moved from another key): left as it is", ErrLoginKey, key, e.KeyID)
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrLoginKey, key, err)
	}
	return nil
}

// userLogin is one user's login to a per-user server, as sealed.
type userLogin struct {
	// Server is the server's name when the user logged in.
	Server      string            `json:"server"`
	Credentials oauth.Credentials `json:"credentials"`
	// WantScopes were asked for since by the server (403
	// insufficient_scope), for the user's next login.
	WantScopes []string `json:"want_scopes,omitempty"`
}

// catalogLogin says whose login lists a per-user server's tools for the
// catalog: the store key of that login record (the first user's).
type catalogLogin struct {
	Login string `json:"login"`
}

// subjectOwner says whose login an account of an authorization server
// is (oauth.Credentials.Subject, where the server says who approved): a
// login is one person's, so an account is one user's login.
type subjectOwner struct {
	User  string `json:"user"`
	Login string `json:"login"` // that login record's store key
}

// release makes the account subject of issuer no one's login when it is
// user's (user logged in with another).
func (l *userLogins) release(ctx context.Context, user, issuer, subject string) {
	sk := subjectKey(issuer, subject)
	unlock, err := l.st.Lock(ctx, sk)
	if err != nil {
		return
	}
	defer unlock()
	var owner subjectOwner
	if b, err := l.st.Get(ctx, sk); err == nil && l.seal.open(sk, b, &owner) == nil && owner.User == user {
		_ = l.st.Delete(ctx, sk)
	}
}

// pendingLogin is a login between /login/SERVER and the callback.
type pendingLogin struct {
	// User started it: only that user may finish it, named by the
	// request (authn.IdentityFrom) or, without one, by the browser that started
	// it: Browser is the hash of the nonce of its cookie.
	User    string              `json:"user"`
	Teams   []string            `json:"teams,omitempty"` // the user's, for the policy at the callback
	Browser string              `json:"browser"`
	Server  string              `json:"server"`
	Expires time.Time           `json:"expires"`
	Pending *oauth.PendingLogin `json:"pending"`
}

// ticket lets a browser that cannot say who its user is (an MCP client's
// user holds an API token the browser does not send) start that user's
// login: the link a needLogin result names carries one. Used once, within
// ticketTTL.
type ticket struct {
	User    string    `json:"user"`
	Teams   []string  `json:"teams,omitempty"` // the user's when the link was made, for the policy
	Server  string    `json:"server"`
	Expires time.Time `json:"expires"`
}

// needLogin is why a user's call cannot reach a per-user server: no
// login, or one that expired or was revoked. It names the page that logs
// in; it never holds a token.
type needLogin struct {
	server, reason, url string
}

func (e *needLogin) Error() string {
	return fmt.Sprintf("server %q needs your own login (%s): open %s in a browser, log in, then call again", e.server, e.reason, e.url)
}

// Unwrap makes the error one of gateway.ErrLoginNeeded: the Gateway's
// outcome of the call is login-needed.
func (e *needLogin) Unwrap() error { return gateway.ErrLoginNeeded }

// LogValue is the error as logged: the link without its ticket, which
// starts a login as the user and goes to that user's result only.
func (e *needLogin) LogValue() slog.Value {
	u, _, _ := strings.Cut(e.url, "?")
	return slog.StringValue((&needLogin{server: e.server, reason: e.reason, url: u}).Error())
}

// userLogins keeps the per-user logins in a store.Store, sealed, and
// hands out their access tokens, refreshing them once across processes
// (store.Lock on the record's key).
type userLogins struct {
	st    store.Store
	seal  *sealer
	oauth *oauth.Store // discovery, registration, exchange, refresh
	base  string       // the gateway's public URL, no trailing slash

	mu    sync.Mutex
	found map[[2]string]string // (user, server URL) → its record's key
	swept time.Time            // when sweep last ran
}

// sweepEvery spaces the sweeps of expired logins under way and tickets.
const sweepEvery = time.Minute

// sweep removes the logins under way and the tickets that expired
// unused (a login abandoned at the authorization page), at most once a
// minute. A record it cannot open is left alone.
func (l *userLogins) sweep(ctx context.Context) {
	l.mu.Lock()
	due := time.Since(l.swept) >= sweepEvery
	if due {
		l.swept = time.Now()
	}
	l.mu.Unlock()
	if !due {
		return
	}
	for _, prefix := range []string{pendingPrefix, ticketPrefix} {
		keys, err := l.st.List(ctx, prefix)
		if err != nil {
			return
		}
		for _, k := range keys {
			b, err := l.st.Get(ctx, k)
			if err != nil {
				continue
			}
			var rec struct {
				Expires time.Time `json:"expires"`
			}
			if l.seal.open(k, b, &rec) == nil && time.Now().After(rec.Expires) {
				_ = l.st.Delete(ctx, k)
			}
		}
	}
}

func (l *userLogins) loginURL(server string) string {
	return l.base + "/login/" + server
}

func (l *userLogins) get(ctx context.Context, key string) (*userLogin, error) {
	b, err := l.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("peruser: reading a per-user login: %w", err)
	}
	var ul userLogin
	if err := l.seal.open(key, b, &ul); err != nil {
		return nil, err
	}
	return &ul, nil
}

func (l *userLogins) put(ctx context.Context, key string, ul *userLogin) error {
	b, err := l.seal.seal(key, ul)
	if err != nil {
		return err
	}
	if err := l.st.Put(ctx, key, b); err != nil {
		return fmt.Errorf("peruser: storing a per-user login: %w", err)
	}
	return nil
}

// find returns the key of user's login to serverURL ("" when there is
// none): the newest of the user's records for that URL.
func (l *userLogins) find(ctx context.Context, user, serverURL string) (string, error) {
	l.mu.Lock()
	key, ok := l.found[[2]string{user, serverURL}]
	l.mu.Unlock()
	if ok {
		if b, err := l.st.Get(ctx, key); err == nil && len(b) > 0 {
			return key, nil
		}
	}
	keys, err := l.st.List(ctx, userPrefix(user))
	if err != nil {
		return "", fmt.Errorf("peruser: listing per-user logins: %w", err)
	}
	key = ""
	var newest time.Time
	for _, k := range keys {
		ul, err := l.get(ctx, k)
		if err != nil {
			return "", err
		}
		if ul != nil && ul.Credentials.ServerURL == serverURL && (key == "" || ul.Credentials.LoggedIn.After(newest)) {
			key, newest = k, ul.Credentials.LoggedIn
		}
	}
	if key != "" {
		l.mu.Lock()
		l.found[[2]string{user, serverURL}] = key
		l.mu.Unlock()
	}
	return key, nil
}

// fresh returns the credentials of the login stored under key for the
// server named server, refreshing them first when the access token expired or is the one
// the server rejected (rejected, "" for none). A refresh holds the store
// lock of key and reads the record again under it: when another process
// refreshed it meanwhile, its token is used and the authorization server
// is not asked again (its refresh token rotated).
func (l *userLogins) fresh(ctx context.Context, key, server, rejected string) (*oauth.Credentials, error) {
	ul, err := l.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if ul == nil {
		return nil, &needLogin{server: server, reason: "not logged in", url: l.loginURL(server)}
	}
	if c := &ul.Credentials; c.Fresh(time.Now()) && c.AccessToken != rejected {
		return c, nil
	}
	unlock, err := l.st.Lock(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("peruser: locking a per-user login: %w", err)
	}
	defer unlock()
	if ul, err = l.get(ctx, key); err != nil {
		return nil, err
	}
	if ul == nil {
		return nil, &needLogin{server: server, reason: "not logged in", url: l.loginURL(server)}
	}
	c := &ul.Credentials
	if c.Fresh(time.Now()) && c.AccessToken != rejected {
		return c, nil // refreshed by another process meanwhile
	}
	if c.RefreshToken == "" {
		return nil, &needLogin{server: server, reason: "the login expired", url: l.loginURL(server)}
	}
	err = l.oauth.Refresh(ctx, server, c)
	if errors.Is(err, oauth.ErrLoginRequired) {
		// Refused by the authorization server: the tokens are cleared, so
		// that no replica asks it again.
		if perr := l.put(ctx, key, ul); perr != nil {
			return nil, perr
		}
		return nil, &needLogin{server: server, reason: "the login expired or was revoked", url: l.loginURL(server)}
	}
	if err != nil {
		return nil, err
	}
	if err := l.put(ctx, key, ul); err != nil {
		return nil, err
	}
	return c, nil
}

// token is fresh's access token.
func (l *userLogins) token(ctx context.Context, key, server, rejected string) (string, error) {
	c, err := l.fresh(ctx, key, server, rejected)
	if err != nil {
		return "", err
	}
	return c.AccessToken, nil
}

// catalogLogin returns the key of the login that lists serverURL's tools
// for the catalog, "" before anyone logged in.
func (l *userLogins) catalogLogin(ctx context.Context, serverURL string) (string, error) {
	key := catalogKey(serverURL)
	b, err := l.st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("peruser: reading a per-user server's catalog login: %w", err)
	}
	var cl catalogLogin
	if err := l.seal.open(key, b, &cl); err != nil {
		return "", err
	}
	return cl.Login, nil
}

// replaceCatalogLogin makes the login under key the one that lists
// serverURL's catalog when there is none, or the one there has no tokens
// left (expired or revoked: cleared by a refused refresh) or is gone.
func (l *userLogins) replaceCatalogLogin(ctx context.Context, serverURL, key string) error {
	ck := catalogKey(serverURL)
	unlock, err := l.st.Lock(ctx, ck)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := l.catalogLogin(ctx, serverURL)
	if err != nil || cur == key {
		return err
	}
	if cur != "" {
		ul, err := l.get(ctx, cur)
		if err != nil {
			return err
		}
		if ul != nil && (ul.Credentials.AccessToken != "" || ul.Credentials.RefreshToken != "") {
			return nil // still usable
		}
	}
	b, err := l.seal.seal(ck, &catalogLogin{Login: key})
	if err != nil {
		return err
	}
	return l.st.Put(ctx, ck, b)
}

// checkKey refuses a store holding per-user records sealed with another
// key: it names the first such record and both key ids.
func (l *userLogins) checkKey(ctx context.Context) error {
	keys, err := l.st.List(ctx, loginsPrefix)
	if err != nil {
		return fmt.Errorf("peruser: listing per-user logins: %w", err)
	}
	other := 0
	var first, firstID string
	for _, k := range keys {
		b, err := l.st.Get(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return fmt.Errorf("peruser: reading per-user logins: %w", err)
		}
		id, err := keyIDOf(b)
		if err != nil {
			return fmt.Errorf("%w: %s is not a sealed login record: left as it is", ErrLoginKey, k)
		}
		if id != l.seal.kid {
			if other++; other == 1 {
				first, firstID = k, id
			}
		}
	}
	if other > 0 {
		return fmt.Errorf("%w: %d of %d records under %s were sealed with another key (%s with key id %s), the configured login key is %s: give the key they were sealed with (--login-key-file, $TOOLSIFT_LOGIN_KEY); nothing was read or changed",
			ErrLoginKey, other, len(keys), loginsPrefix, first, firstID, l.seal.kid)
	}
	return nil
}

// userAuth is the upstream.Authorizer of one user's Hub of one per-user
// server: the user's token, never another's.
type userAuth struct {
	l      *userLogins
	user   string
	mu     sync.Mutex
	forced string // the token got after the server refused the one before
	needed *needLogin
	// cached is the last token handed out, used until it is about to
	// expire or the server refuses it: no store read per request.
	cached oauth.Credentials
}

func (a *userAuth) Token(ctx context.Context, server, serverURL string) (string, error) {
	a.mu.Lock()
	if a.cached.Fresh(time.Now()) {
		tok := a.cached.AccessToken
		a.mu.Unlock()
		return tok, nil
	}
	a.mu.Unlock()
	key, err := a.l.find(ctx, a.user, serverURL)
	if err != nil {
		return "", err
	}
	if key == "" {
		return "", a.need(&needLogin{server: server, reason: "not logged in", url: a.l.loginURL(server)})
	}
	c, err := a.l.fresh(ctx, key, server, "")
	if nl, ok := errors.AsType[*needLogin](err); ok {
		return "", a.need(nl)
	}
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	a.needed = nil
	a.cached = oauth.Credentials{AccessToken: c.AccessToken, Expiry: c.Expiry}
	a.mu.Unlock()
	return c.AccessToken, nil
}

func (a *userAuth) Unauthorized(ctx context.Context, server, serverURL string, resp *http.Response) error {
	if resp.StatusCode == http.StatusForbidden {
		// Step-up: the scopes asked for are remembered for the next login.
		want := insufficientScope(resp)
		if want == nil {
			return a.need(&needLogin{server: server, reason: fmt.Sprintf("the server refuses the login (HTTP %d)", resp.StatusCode), url: a.l.loginURL(server)})
		}
		if key, err := a.l.find(ctx, a.user, serverURL); err == nil && key != "" {
			if err := a.l.wantScopes(ctx, key, want); err != nil {
				return err
			}
		}
		return a.need(&needLogin{server: server, reason: fmt.Sprintf("the server asks for scope %q", strings.Join(want, " ")), url: a.l.loginURL(server)})
	}
	sent := bearerOf(resp.Request)
	a.mu.Lock()
	forced := a.forced
	a.cached = oauth.Credentials{} // read the store again
	a.mu.Unlock()
	if sent != "" && sent == forced {
		return a.need(&needLogin{server: server, reason: "the server rejects a freshly refreshed token", url: a.l.loginURL(server)})
	}
	key, err := a.l.find(ctx, a.user, serverURL)
	if err != nil {
		return err
	}
	if key == "" {
		return a.need(&needLogin{server: server, reason: "not logged in", url: a.l.loginURL(server)})
	}
	tok, err := a.l.token(ctx, key, server, sent)
	if nl, ok := errors.AsType[*needLogin](err); ok {
		return a.need(nl)
	}
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.forced = tok
	a.mu.Unlock()
	return nil
}

// need remembers why the user's login is needed, for the call's result.
func (a *userAuth) need(nl *needLogin) error {
	a.mu.Lock()
	a.needed = nl
	a.mu.Unlock()
	return nl
}

// loginNeeded returns why the last request needed a login, nil when it did
// not.
func (a *userAuth) loginNeeded() *needLogin {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.needed
}

// insufficientScope returns the scopes a 403 insufficient_scope answer
// asks for, nil when it is not one.
func insufficientScope(resp *http.Response) []string {
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// wantScopes adds scopes to what the login under key asks for next time.
func (l *userLogins) wantScopes(ctx context.Context, key string, scopes []string) error {
	unlock, err := l.st.Lock(ctx, key)
	if err != nil {
		return fmt.Errorf("peruser: locking a per-user login: %w", err)
	}
	defer unlock()
	ul, err := l.get(ctx, key)
	if err != nil || ul == nil {
		return err
	}
	n := len(ul.WantScopes)
	for _, sc := range scopes {
		if !slices.Contains(ul.WantScopes, sc) && !slices.Contains(ul.Credentials.Scopes, sc) {
			ul.WantScopes = append(ul.WantScopes, sc)
		}
	}
	if len(ul.WantScopes) == n {
		return nil
	}
	return l.put(ctx, key, ul)
}

// scopesOf returns the scopes user's login to serverURL was granted and
// was asked for since: a new login asks for them all.
func (l *userLogins) scopesOf(ctx context.Context, user, serverURL string) []string {
	key, err := l.find(ctx, user, serverURL)
	if err != nil || key == "" {
		return nil
	}
	ul, err := l.get(ctx, key)
	if err != nil || ul == nil {
		return nil
	}
	out := slices.Clone(ul.Credentials.Scopes)
	for _, sc := range ul.WantScopes {
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

func bearerOf(req *http.Request) string {
	if req == nil {
		return ""
	}
	if f := strings.Fields(req.Header.Get("Authorization")); len(f) == 2 && strings.EqualFold(f[0], "bearer") {
		return f[1]
	}
	return ""
}
