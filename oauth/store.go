package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolsift/toolsift/store"
)

// ErrLoginRequired is what every error that asks for a login matches
// (errors.Is); the error itself is a *LoginError.
var ErrLoginRequired = errors.New("oauth: login required")

// LoginError says that a server needs a (new) login, why, and which command
// gives it. It never holds a token.
type LoginError struct {
	// Server is the server's name, as in the config.
	Server string
	// Reason is why: "not logged in", "the stored login expired or was
	// revoked", "the server asks for scope \"write\"".
	Reason string
	// Again is set when there was a login before.
	Again bool
	// Hint is Options.LoginHint: the command that logs in, without the
	// server's name.
	Hint string
}

func (e *LoginError) Error() string {
	msg := fmt.Sprintf("server %q needs a login: %s", e.Server, e.Reason)
	if e.Again {
		msg = fmt.Sprintf("server %q: %s", e.Server, e.Reason)
	}
	if e.Hint == "" {
		return msg
	}
	verb := "log in with"
	if e.Again {
		verb = "log in again"
	}
	return fmt.Sprintf("%s; %s: %s %s", msg, verb, e.Hint, shellWord(e.Server))
}

// Is makes every LoginError match ErrLoginRequired.
func (e *LoginError) Is(target error) bool { return target == ErrLoginRequired }

var plainWord = regexp.MustCompile(`^[A-Za-z0-9._/@:+=-]+$`)

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Options configures a Store. The zero value is usable.
type Options struct {
	// Store keeps the logins, one value per server URL under
	// oauth/<hash of the URL>.json; nil means DefaultStore(). A shared
	// store (several replicas of a gateway) shares the logins and their
	// refreshes, under its Lock. The Store does not close it.
	Store store.Store

	// HTTPClient makes the requests to authorization servers (metadata,
	// registration, tokens); nil means http.DefaultClient. Discovery
	// requests get the go-sdk's protections against server-side request
	// forgery on top of its transport.
	HTTPClient *http.Client

	// LoginHint is the command that logs in, named in every LoginError with
	// the server's name appended: "toolbench login --config mcp.json".
	LoginHint string
}

// DefaultStore returns where a Store keeps its logins unless
// Options.Store says otherwise: the folder os.UserConfigDir()/toolsift
// ($XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/Application Support
// on macOS, %AppData% on Windows), so that the logins are the files
// oauth/<hash>.json in it, where toolsift has always kept them. A config
// folder rather than a cache: clearing caches must not log the user out.
func DefaultStore() (*store.Dir, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("oauth: no folder for tokens: %w", err)
	}
	return store.NewDir(filepath.Join(d, "toolsift"))
}

// A Store keeps, per MCP server URL, the tokens a login got and the client
// and authorization server they belong to, in one value each of a
// store.Store (in a store.Dir, a file 0600 in a 0700 folder; no OS keyring
// is used). It hands out access tokens, refreshing them when they expire,
// and says which servers need a login. It never opens a browser: Login
// does, when asked.
//
// Its Token and Unauthorized methods make it an upstream.Authorizer
// (HubOptions.Auth). Its methods are safe for concurrent use, and several
// processes may share one store: a refresh holds the store's lock named
// after the server's login, so that a rotated refresh token is used once.
type Store struct {
	st     store.Store
	client *http.Client
	hint   string

	mu     sync.Mutex
	locks  map[string]*sync.Mutex // per server URL: one refresh at a time
	forced map[string]*forced     // server URL → the token got by refreshing after the server refused the previous one
	cache  map[string]cached
}

// forced is an access token got because the server refused the one
// before. Refused again on the retry it was got for (uses 1), it is not
// refreshed once more: the login is what is wrong.
type forced struct {
	token string
	uses  int
}

// cached is a record as read, with the value it was read from: a value
// read again is decoded again only when it changed.
type cached struct {
	rec  *record
	data []byte
}

// New returns a Store over opts.Store (or DefaultStore). It writes
// nothing until a login is stored.
func New(opts *Options) (*Store, error) {
	s := &Store{locks: map[string]*sync.Mutex{}, forced: map[string]*forced{}, cache: map[string]cached{}}
	if opts != nil {
		s.st, s.client, s.hint = opts.Store, opts.HTTPClient, opts.LoginHint
	}
	if s.st == nil {
		d, err := DefaultStore()
		if err != nil {
			return nil, err
		}
		s.st = d
	}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	return s, nil
}

// Credentials are what one login got: the tokens, and the client and
// authorization server they belong to, which is all a refresh needs. They
// hold secrets (the tokens, a client secret): keep them in a 0600 file or
// encrypted, and never log them. The JSON form is the one the login files
// use.
type Credentials struct {
	// ServerURL is the configured URL the tokens are for; they are sent
	// to its origin only.
	ServerURL string `json:"server_url"`
	// Resource is the RFC 8707 resource the tokens were issued for.
	Resource string `json:"resource"`
	// Issuer, TokenURL and AuthStyle name the authorization server and how
	// the client authenticates at its token endpoint (AuthStyle: 1 in the
	// form, 2 in a Basic header, as golang.org/x/oauth2's AuthStyle).
	Issuer    string `json:"issuer"`
	TokenURL  string `json:"token_endpoint"`
	AuthStyle int    `json:"auth_style"`
	// ClientID and ClientSecret identify the client: registered at login
	// (dynamic client registration), a metadata document URL, or the
	// config's.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// Scopes were granted.
	Scopes []string `json:"scopes,omitempty"`

	AccessToken  string    `json:"access_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	LoggedIn     time.Time `json:"logged_in"`
	// Subject is who approved the login, where the authorization server
	// said so in its token response: the sub of its OpenID Connect
	// id_token, else of the access token when that is a JWT (RFC 9068),
	// either one only when its iss, if it has one, is Issuer; "" when it
	// said neither (an opaque token). It is read from the token
	// endpoint's own answer to this client, not verified otherwise
	// (OpenID Connect Core 3.1.3.7), and kept through refreshes.
	Subject string `json:"subject,omitempty"`
}

// Fresh reports whether c has an access token that does not expire
// within the next 30 seconds (a token so close to its expiry is refreshed
// before use, so that it does not expire in flight).
func (c *Credentials) Fresh(now time.Time) bool {
	return c.AccessToken != "" && (c.Expiry.IsZero() || c.Expiry.Sub(now) > expiryMargin)
}

// record is one server's file.
type record struct {
	Version int `json:"version"`
	Credentials
	// WantScopes were asked for since by a server's insufficient_scope
	// answer, for the next login.
	WantScopes []string `json:"want_scopes,omitempty"`
}

// expiryMargin: an access token this close to its expiry is refreshed
// before use, so that it does not expire in flight.
const expiryMargin = 30 * time.Second

// key returns the key of serverURL's record: a hash of the URL, so that
// neither the name nor a secret in the URL shows in the store.
func key(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return "oauth/" + hex.EncodeToString(sum[:16]) + ".json"
}

// maxFileBytes bounds a login (docs/limits.md): records are a few
// kilobytes.
const maxFileBytes = 1 << 20

// load returns serverURL's record, nil when there is none. It is read
// with at most maxFileBytes; in a store.Dir under the cache's rules
// (internal/cachefile): a regular file, opened without blocking, and on
// Unix neither it nor its folder owned by another user or writable by
// group or others — refused, naming the file, since a forged login could
// send the refresh token to another token endpoint.
func (s *Store) load(ctx context.Context, serverURL string) (*record, error) {
	k := key(serverURL)
	data, err := store.GetBounded(ctx, s.st, k, maxFileBytes)
	if errors.Is(err, store.ErrNotFound) {
		s.mu.Lock()
		delete(s.cache, serverURL)
		s.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: login %s: %w", k, err)
	}
	s.mu.Lock()
	c, ok := s.cache[serverURL]
	s.mu.Unlock()
	if ok && bytes.Equal(c.data, data) {
		r := *c.rec
		return &r, nil
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil || r.Version != 1 {
		return nil, fmt.Errorf("oauth: login %s is damaged; log out and log in again", k)
	}
	if r.ServerURL != serverURL {
		return nil, nil // a hash collision: not ours
	}
	s.mu.Lock()
	s.cache[serverURL] = cached{rec: &r, data: data}
	s.mu.Unlock()
	rc := r
	return &rc, nil
}

// save writes r atomically (in a store.Dir, readable by the user only).
func (s *Store) save(ctx context.Context, r *record) error {
	r.Version = 1
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if err := s.st.Put(ctx, key(r.ServerURL), data); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	return nil
}

// serverLock returns the in-process lock of serverURL's refreshes.
func (s *Store) serverLock(serverURL string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locks[serverURL]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[serverURL] = l
	}
	return l
}

func (s *Store) loginError(server, reason string, again bool) error {
	return &LoginError{Server: server, Reason: reason, Again: again, Hint: s.hint}
}

// LoggedIn reports whether serverURL has stored tokens.
func (s *Store) LoggedIn(ctx context.Context, serverURL string) (bool, error) {
	r, err := s.load(ctx, serverURL)
	return r != nil && (r.AccessToken != "" || r.RefreshToken != ""), err
}

// Token returns the access token to send to the server named server at
// serverURL, refreshing it first when it expired: "" when the server has no
// login (it may need none), a *LoginError when its login expired or was
// revoked. It never opens a browser.
func (s *Store) Token(ctx context.Context, server, serverURL string) (string, error) {
	r, err := s.load(ctx, serverURL)
	if err != nil || r == nil {
		return "", err
	}
	if r.Fresh(time.Now()) {
		s.mu.Lock()
		if f := s.forced[serverURL]; f != nil {
			if f.uses++; f.token != r.AccessToken || f.uses > 1 {
				delete(s.forced, serverURL) // past its retry
			}
		}
		s.mu.Unlock()
		return r.AccessToken, nil
	}
	if r.RefreshToken == "" {
		if r.AccessToken == "" {
			return "", s.loginError(server, "the stored login expired or was revoked", true)
		}
		return "", s.loginError(server, "the access token expired and the authorization server gave no refresh token", true)
	}
	return s.refresh(ctx, server, serverURL, "")
}

// Unauthorized is told that the server answered resp (401, or 403 with
// insufficient_scope) to a request that carried the token Token returned.
// It returns nil when Token now has another token to retry with once (it
// refreshed it), or a *LoginError.
func (s *Store) Unauthorized(ctx context.Context, server, serverURL string, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	r, err := s.load(ctx, serverURL)
	if err != nil {
		return err
	}
	if r == nil || (r.AccessToken == "" && r.RefreshToken == "") {
		return s.loginError(server, "not logged in", r != nil)
	}
	if resp.StatusCode == http.StatusForbidden {
		want := bearerParam(challenges, "scope")
		if bearerParam(challenges, "error") != "insufficient_scope" || want == "" {
			return s.loginError(server, fmt.Sprintf("the server refuses the token (HTTP %d)", resp.StatusCode), true)
		}
		unlock := s.serverLock(serverURL)
		unlock.Lock()
		defer unlock.Unlock()
		if r, err = s.load(ctx, serverURL); err != nil || r == nil {
			return s.loginError(server, "not logged in", false)
		}
		r.WantScopes = unionScopes(r.WantScopes, strings.Fields(want))
		if err := s.save(ctx, r); err != nil {
			return err
		}
		return s.loginError(server, fmt.Sprintf("the server asks for scope %q", want), true)
	}
	sent := ""
	if resp.Request != nil {
		if f := strings.Fields(resp.Request.Header.Get("Authorization")); len(f) == 2 && strings.EqualFold(f[0], "bearer") {
			sent = f[1]
		}
	}
	if sent != r.AccessToken && r.Fresh(time.Now()) {
		return nil // refreshed since: retry with the new one
	}
	s.mu.Lock()
	f := s.forced[serverURL]
	s.mu.Unlock()
	if f != nil && f.token == sent {
		return s.loginError(server, "the server rejects a freshly refreshed token", true)
	}
	if r.RefreshToken == "" {
		unlock := s.serverLock(serverURL)
		unlock.Lock()
		defer unlock.Unlock()
		if r, err := s.load(ctx, serverURL); err == nil && r != nil && r.AccessToken == sent {
			r.AccessToken = ""
			if err := s.save(ctx, r); err != nil {
				return err
			}
		}
		return s.loginError(server, "the server rejected the stored token (expired or revoked)", true)
	}
	tok, err := s.refresh(ctx, server, serverURL, sent)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.forced[serverURL] = &forced{token: tok}
	s.mu.Unlock()
	return nil
}

// refresh gets a new access token with the refresh token, unless another
// goroutine or process did since the token rejected was read.
func (s *Store) refresh(ctx context.Context, server, serverURL, rejected string) (string, error) {
	mu := s.serverLock(serverURL)
	mu.Lock()
	defer mu.Unlock()
	unlock, err := s.st.Lock(ctx, key(serverURL))
	if err != nil {
		return "", fmt.Errorf("oauth: %w", err)
	}
	defer unlock()
	r, err := s.load(ctx, serverURL)
	if err != nil {
		return "", err
	}
	if r == nil || r.RefreshToken == "" {
		return "", s.loginError(server, "the stored login expired or was revoked", r != nil)
	}
	if r.Fresh(time.Now()) && r.AccessToken != rejected {
		return r.AccessToken, nil
	}
	err = s.Refresh(ctx, server, &r.Credentials)
	if errors.Is(err, ErrLoginRequired) {
		// Forget the tokens, so that the next process says so without
		// asking the network.
		if serr := s.save(ctx, r); serr != nil {
			return "", serr
		}
		return "", err
	}
	if err != nil {
		return "", err
	}
	if err := s.save(ctx, r); err != nil {
		return "", err
	}
	return r.AccessToken, nil
}

// Refresh gets c a new access token with its refresh token (and the
// rotated refresh token, when the authorization server sends one),
// changing c in place; server names the server in errors. Where the
// authorization server refuses the refresh token (invalid_grant: revoked
// or expired; invalid_client: the registration is gone) only a new login
// helps: c's tokens are cleared and the error is a *LoginError. It neither
// reads nor writes the Store's files: a caller keeping Credentials
// elsewhere holds its own lock around it, so that a rotated refresh token
// is used once.
func (s *Store) Refresh(ctx context.Context, server string, c *Credentials) error {
	if c.RefreshToken == "" {
		return s.loginError(server, "the access token expired and the authorization server gave no refresh token", true)
	}
	cfg := &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)}}
	// RFC 8707 and the MCP spec want the resource in every token request;
	// x/oauth2 sends only grant_type and refresh_token, so its client adds it.
	client := &http.Client{Transport: &formParam{base: transportOf(s.client), key: "resource", value: c.Resource},
		Timeout: s.client.Timeout, CheckRedirect: s.client.CheckRedirect, Jar: s.client.Jar}
	old := &oauth2.Token{RefreshToken: c.RefreshToken, Expiry: time.Unix(1, 0)} // expired: refresh now
	tok, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, client), old).Token()
	if err != nil {
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.ErrorCode != "" {
			c.AccessToken, c.RefreshToken = "", ""
			return s.loginError(server, fmt.Sprintf("the stored login expired or was revoked (%s)", re.ErrorCode), true)
		}
		return fmt.Errorf("oauth: server %q: refreshing its token: %w", server, err)
	}
	c.AccessToken, c.TokenType, c.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		c.RefreshToken = tok.RefreshToken
	}
	if sc, ok := tok.Extra("scope").(string); ok && sc != "" {
		c.Scopes = strings.Fields(sc)
	}
	return nil
}

// Logout forgets serverURL's tokens and client; it reports whether there
// were any.
func (s *Store) Logout(ctx context.Context, serverURL string) (bool, error) {
	mu := s.serverLock(serverURL)
	mu.Lock()
	defer mu.Unlock()
	k := key(serverURL)
	_, err := s.st.Get(ctx, k)
	had := err == nil
	if err := s.st.Delete(ctx, k); err != nil {
		return false, fmt.Errorf("oauth: %w", err)
	}
	s.mu.Lock()
	delete(s.cache, serverURL)
	delete(s.forced, serverURL)
	s.mu.Unlock()
	return had, nil
}

// bearerParam returns a parameter of the first Bearer challenge that has it.
func bearerParam(cs []oauthex.Challenge, key string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[key] != "" {
			return c.Params[key]
		}
	}
	return ""
}

// unionScopes returns a's scopes followed by those of b it lacks.
func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
