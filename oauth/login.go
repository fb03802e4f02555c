package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrNoLoginNeeded: the server answered without asking for authorization
// and publishes no protected resource metadata.
var ErrNoLoginNeeded = errors.New("oauth: the server does not ask for a login")

// LoginOptions configures one Login. Open is required.
type LoginOptions struct {
	// ClientID and ClientSecret identify a client registered beforehand
	// with the server's authorization server (a config's oauth.clientId and
	// oauth.clientSecret). Without them, the client is ClientMetadataURL
	// where the authorization server accepts client ID metadata documents,
	// else one registered at login (dynamic client registration).
	ClientID, ClientSecret string
	ClientMetadataURL      string

	// Scopes are asked for besides those the server names (in its 401
	// challenge, else in its resource metadata) and those granted or asked
	// for before.
	Scopes []string

	// CallbackPort is the loopback port the authorization server redirects
	// the browser to (http://127.0.0.1:PORT/callback); 0 picks a free one.
	// Set it when a pre-registered client allows one redirect URI only.
	CallbackPort int

	// RedirectURL is where the authorization server sends the browser
	// back, for StartLogin: a web server's callback (a gateway's
	// https://HOST/oauth/callback). Login does not use it.
	RedirectURL string

	// Header is sent with the request that asks the server what it needs:
	// the server's configured headers.
	Header http.Header

	// Open is given the authorization URL to show the user: open a
	// browser, print it. Login then waits for the browser's redirect, or
	// for ctx to end.
	Open func(ctx context.Context, authURL string) error
}

// Grant is what a login got (never the tokens themselves).
type Grant struct {
	// Issuer is the authorization server.
	Issuer string
	// Scopes were granted (or asked for, when the server did not say).
	Scopes []string
	// Expiry is when the access token expires; zero when it did not say.
	Expiry time.Time
	// Refreshable is set when a refresh token came with it: the login
	// outlives the access token.
	Refreshable bool
}

// Login runs the MCP authorization flow for the server named server at
// serverURL and stores the tokens it gets: it asks the server what it needs
// (the WWW-Authenticate challenge of its 401, its protected resource
// metadata, RFC 9728), discovers the authorization server (RFC 8414 or
// OpenID Connect discovery), identifies the client (LoginOptions, or
// dynamic client registration, RFC 7591), and runs the authorization code
// flow with PKCE (S256) and the resource parameter (RFC 8707), with the
// redirect to a loopback port. The previous login of serverURL, if any, is
// replaced when this one succeeds.
func (s *Store) Login(ctx context.Context, server, serverURL string, opts *LoginOptions) (*Grant, error) {
	if opts == nil || opts.Open == nil {
		return nil, errors.New("oauth: Login needs LoginOptions.Open")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.CallbackPort)))
	if err != nil {
		return nil, fmt.Errorf("oauth: login to server %q: listening for the redirect: %w", server, err)
	}
	defer ln.Close()
	prev, _ := s.load(ctx, serverURL)
	p, err := s.begin(ctx, server, serverURL, "http://"+ln.Addr().String()+"/callback", opts, prev)
	if err != nil {
		return nil, err
	}
	res, err := waitRedirect(ctx, ln, p.State, func() error { return opts.Open(ctx, p.AuthURL) })
	if err != nil {
		return nil, fmt.Errorf("oauth: login to server %q: %w", server, err)
	}
	c, err := s.FinishLogin(ctx, p, res.code, res.iss)
	if err != nil {
		return nil, err
	}
	r := &record{Credentials: *c}
	mu := s.serverLock(serverURL)
	mu.Lock()
	err = s.save(ctx, r)
	s.mu.Lock()
	delete(s.forced, serverURL)
	s.mu.Unlock()
	mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &Grant{Issuer: r.Issuer, Scopes: r.Scopes, Expiry: r.Expiry, Refreshable: r.RefreshToken != ""}, nil
}

// PendingLogin is a login between its start (StartLogin) and the
// browser's return to the redirect URL (FinishLogin): what finishing it
// needs. It holds secrets (the PKCE verifier, a client secret): a server
// that keeps it between requests keeps it encrypted, and forgets it once
// used. Its JSON form round-trips.
type PendingLogin struct {
	// Server is the server's name, for errors.
	Server string `json:"server"`
	// AuthURL is the authorization URL to send the user's browser to; it
	// passed CheckBrowserURL.
	AuthURL string `json:"auth_url"`
	// State is the state parameter of AuthURL, which the browser brings
	// back: the key to find this PendingLogin by.
	State string `json:"state"`
	// RedirectURL is where the authorization server sends the browser back.
	RedirectURL string `json:"redirect_url"`
	// Verifier is the PKCE code verifier.
	Verifier string `json:"verifier"`
	// AuthEndpoint is the authorization server's authorization endpoint.
	AuthEndpoint string `json:"authorization_endpoint"`
	// IssRequired is set when the authorization server says it sends its
	// issuer in the authorization response (RFC 9207).
	IssRequired bool `json:"iss_required,omitempty"`
	// Credentials are the client and the authorization server, and the
	// scopes asked for; no tokens yet.
	Credentials Credentials `json:"credentials"`
}

// StartLogin starts a login whose browser comes back to
// opts.RedirectURL, a web server's own callback (a gateway's), rather
// than to a loopback port: the same discovery, client identification
// (registered with RedirectURL) and PKCE as Login. Send the user's
// browser to the returned AuthURL, keep the PendingLogin by its State, and
// give FinishLogin the code and iss parameters the browser brings back.
// opts.Open and opts.CallbackPort are not used; nothing is stored.
func (s *Store) StartLogin(ctx context.Context, server, serverURL string, opts *LoginOptions) (*PendingLogin, error) {
	if opts == nil || opts.RedirectURL == "" {
		return nil, errors.New("oauth: StartLogin needs LoginOptions.RedirectURL")
	}
	if u, err := url.Parse(opts.RedirectURL); err != nil || !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("oauth: StartLogin: LoginOptions.RedirectURL %q is not an absolute URL", opts.RedirectURL)
	}
	return s.begin(ctx, server, serverURL, opts.RedirectURL, opts, nil)
}

// begin runs a login's steps up to the authorization URL. prev, the
// server's previous login, adds its scopes (step-up).
func (s *Store) begin(ctx context.Context, server, serverURL, redirect string, opts *LoginOptions, prev *record) (*PendingLogin, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("oauth: login to server %q: %w", server, fmt.Errorf(format, a...))
	}
	challenges, status, err := s.probe(ctx, serverURL, opts.Header)
	if err != nil {
		return nil, fail("%w", err)
	}
	prm, tried := s.resourceMetadata(ctx, serverURL, challenges)
	legacy := false
	if prm == nil {
		if status != http.StatusUnauthorized && status != http.StatusForbidden {
			return nil, fmt.Errorf("server %q answered HTTP %d: %w", server, status, ErrNoLoginNeeded)
		}
		// MCP 2025-03-26: the server's origin is its authorization server.
		if prm = legacyResourceMetadata(serverURL); prm == nil {
			return nil, fail("it answered HTTP %d but publishes no protected resource metadata (%s)", status, strings.Join(tried, "; "))
		}
		legacy = true
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, s.client)
	if err == nil && asm == nil && legacy {
		asm = legacyAuthServerMetadata(issuer)
	}
	switch {
	case err != nil:
		return nil, fail("authorization server %s: %w", issuer, err)
	case asm == nil:
		return nil, fail("authorization server %s publishes no metadata (RFC 8414 or OpenID Connect discovery)", issuer)
	case legacy && len(asm.CodeChallengeMethodsSupported) == 0:
		// 2025-03-26 requires PKCE of clients and servers but no
		// metadata saying so: S256 is sent.
	case !slices.Contains(asm.CodeChallengeMethodsSupported, "S256"):
		return nil, fail("authorization server %s does not support PKCE with S256", issuer)
	}
	if err := CheckBrowserURL(asm.AuthorizationEndpoint); err != nil {
		return nil, fail("authorization server %s: its authorization_endpoint: %w", issuer, err)
	}

	r := &record{Credentials: Credentials{ServerURL: serverURL, Resource: prm.Resource, Issuer: asm.Issuer, TokenURL: asm.TokenEndpoint}}
	if err := s.identify(ctx, asm, redirect, opts, r); err != nil {
		return nil, fail("%w", err)
	}

	scopes := slices.Clone(opts.Scopes)
	if sc := bearerParam(challenges, "scope"); sc != "" {
		scopes = unionScopes(scopes, strings.Fields(sc))
	} else {
		scopes = unionScopes(scopes, prm.ScopesSupported)
	}
	if prev != nil && prev.Issuer == asm.Issuer {
		// Step-up: keep what was granted, add what a server asked for.
		scopes = unionScopes(scopes, prev.Scopes)
		scopes = unionScopes(scopes, prev.WantScopes)
	}
	if slices.Contains(asm.ScopesSupported, "offline_access") {
		scopes = unionScopes(scopes, []string{"offline_access"})
	}
	r.Scopes = scopes
	p := &PendingLogin{Server: server, RedirectURL: redirect, Verifier: oauth2.GenerateVerifier(), State: rand.Text(),
		AuthEndpoint: asm.AuthorizationEndpoint, IssRequired: asm.AuthorizationResponseIssParameterSupported, Credentials: r.Credentials}
	p.AuthURL = p.config().AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier), oauth2.SetAuthURLParam("resource", r.Resource))
	return p, nil
}

func (p *PendingLogin) config() *oauth2.Config {
	c := &p.Credentials
	return &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: p.RedirectURL, Scopes: c.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthEndpoint, TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)}}
}

// FinishLogin completes p with what the browser brought back to its
// redirect URL (the code and iss parameters): it checks the issuer (RFC
// 9207) and exchanges the code, with p's PKCE verifier and resource, for
// tokens. The caller checks the state (it found p by it) and stores the
// Credentials; nothing is stored here. A PendingLogin is finished once:
// the authorization server refuses its code a second time.
func (s *Store) FinishLogin(ctx context.Context, p *PendingLogin, code, iss string) (*Credentials, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("oauth: login to server %q: %w", p.Server, fmt.Errorf(format, a...))
	}
	if code == "" {
		return nil, fail("the redirect carries no authorization code")
	}
	// RFC 9207: where the server sends its issuer, it must be this one.
	if (iss != "" || p.IssRequired) && iss != p.Credentials.Issuer {
		return nil, fail("the authorization response names issuer %q, want %q", iss, p.Credentials.Issuer)
	}
	tokenClient := context.WithValue(ctx, oauth2.HTTPClient, s.client)
	tok, err := p.config().Exchange(tokenClient, code, oauth2.VerifierOption(p.Verifier), oauth2.SetAuthURLParam("resource", p.Credentials.Resource))
	if err != nil {
		return nil, fail("exchanging the authorization code: %w", err)
	}
	c := p.Credentials
	c.Scopes = slices.Clone(c.Scopes)
	c.AccessToken, c.TokenType, c.RefreshToken, c.Expiry = tok.AccessToken, tok.TokenType, tok.RefreshToken, tok.Expiry
	if sc, ok := tok.Extra("scope").(string); ok && sc != "" {
		c.Scopes = strings.Fields(sc)
	}
	idToken, _ := tok.Extra("id_token").(string)
	c.Subject = subjectOf(c.Issuer, idToken, tok.AccessToken)
	c.LoggedIn = time.Now().UTC().Truncate(time.Second)
	return &c, nil
}

// subjectOf returns the sub claim of the first of jwts that is a JWT
// whose iss, if it has one, is issuer: who approved the login, where the
// token response says so (Credentials.Subject). Opaque tokens give "".
func subjectOf(issuer string, jwts ...string) string {
	for _, t := range jwts {
		parts := strings.Split(t, ".")
		if len(parts) != 3 {
			continue
		}
		payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
		if err != nil {
			continue
		}
		var claims struct {
			Iss string `json:"iss"`
			Sub string `json:"sub"`
		}
		if json.Unmarshal(payload, &claims) != nil || claims.Sub == "" || claims.Iss != "" && claims.Iss != issuer {
			continue
		}
		return claims.Sub
	}
	return ""
}

// probe sends what a client sends first (initialize) without a token, and
// returns the challenges and status of the answer. A server that answers
// initialize with neither 401 nor 403 may speak only MCP 2026-07-28, which
// has no initialize and may refuse a request without its headers before
// it asks for a token: it is asked again with server/discover, as a client
// of that revision begins.
func (s *Store) probe(ctx context.Context, serverURL string, header http.Header) ([]oauthex.Challenge, int, error) {
	cs, status, err := s.probeWith(ctx, serverURL, header, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolsift-login","version":"1"}}}`, "")
	if err != nil || status == http.StatusUnauthorized || status == http.StatusForbidden {
		return cs, status, err
	}
	cs2, status2, err := s.probeWith(ctx, serverURL, header, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"toolsift-login","version":"1"}}}}`, "2026-07-28")
	if err != nil || (status2 != http.StatusUnauthorized && status2 != http.StatusForbidden) {
		return cs, status, nil // what initialize was told
	}
	return cs2, status2, nil
}

// probeWith sends one probe: body, and version's headers when it names a
// revision of 2026-07-28 or later.
func (s *Store) probeWith(ctx context.Context, serverURL string, header http.Header, body, version string) ([]oauthex.Challenge, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
		req.Header.Set("Mcp-Method", "server/discover")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("asking the server what it needs: %w", scrubURL(err, serverURL))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && resp.StatusCode < 300 {
		// It opened a session it needs no login for: close it.
		if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, serverURL, nil); err == nil {
			del.Header.Set("Mcp-Session-Id", id)
			if r, err := s.client.Do(del); err == nil {
				r.Body.Close()
			}
		}
	}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("its WWW-Authenticate header: %w", err)
	}
	return cs, resp.StatusCode, nil
}

// resourceMetadata finds the server's protected resource metadata where the
// MCP spec says to look: the challenge's resource_metadata, then the
// well-known URI with the server's path, then at the root. It returns why
// each place failed when none answered.
func (s *Store) resourceMetadata(ctx context.Context, serverURL string, cs []oauthex.Challenge) (*oauthex.ProtectedResourceMetadata, []string) {
	type place struct{ url, resource string }
	var places []place
	if u := bearerParam(cs, "resource_metadata"); u != "" {
		places = append(places, place{u, serverURL})
	} else if u := anyParam(cs, "resource_metadata"); u != "" {
		places = append(places, place{u, serverURL})
	}
	if u, err := url.Parse(serverURL); err == nil {
		m := url.URL{Scheme: u.Scheme, Host: u.Host}
		if p := strings.Trim(u.Path, "/"); p != "" {
			m.Path = "/.well-known/oauth-protected-resource/" + p
			places = append(places, place{m.String(), serverURL})
		}
		m.Path = "/.well-known/oauth-protected-resource"
		places = append(places, place{m.String(), (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()})
	}
	var tried []string
	for _, p := range places {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, p.url, p.resource, s.client)
		switch {
		case err != nil:
			tried = append(tried, scrubURL(err, serverURL).Error())
		case prm == nil || len(prm.AuthorizationServers) == 0:
			tried = append(tried, fmt.Sprintf("%s names no authorization server", p.url))
		default:
			return prm, nil
		}
	}
	return nil, tried
}

func anyParam(cs []oauthex.Challenge, key string) string {
	for _, c := range cs {
		if c.Params[key] != "" {
			return c.Params[key]
		}
	}
	return ""
}

// identify sets r's client: the configured one, a client ID metadata
// document, or one registered now.
func (s *Store) identify(ctx context.Context, asm *oauthex.AuthServerMeta, redirect string, opts *LoginOptions, r *record) error {
	methods := asm.TokenEndpointAuthMethodsSupported
	switch {
	case opts.ClientID != "":
		r.ClientID, r.ClientSecret = opts.ClientID, opts.ClientSecret
		r.AuthStyle = int(oauth2.AuthStyleInParams)
		if r.ClientSecret != "" && !slices.Contains(methods, "client_secret_post") && (len(methods) == 0 || slices.Contains(methods, "client_secret_basic")) {
			r.AuthStyle = int(oauth2.AuthStyleInHeader) // RFC 6749's default
		}
	case opts.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		r.ClientID, r.AuthStyle = opts.ClientMetadataURL, int(oauth2.AuthStyleInParams)
	case asm.RegistrationEndpoint != "":
		// A public client: a command on the user's machine keeps no secret
		// the user could not read. Where the server wants a secret, it
		// gets one.
		method := "none"
		if len(methods) > 0 && !slices.Contains(methods, "none") {
			method = "client_secret_basic"
			if slices.Contains(methods, "client_secret_post") {
				method = "client_secret_post"
			}
		}
		// A loopback redirect is a native application's; a gateway's
		// callback is a web application's (RFC 7591, OpenID Connect
		// registration).
		appType := "native"
		if u, err := url.Parse(redirect); err == nil && !loopbackHost(u.Hostname()) {
			appType = "web"
		}
		reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			TokenEndpointAuthMethod: method,
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              "toolsift",
			ApplicationType:         appType,
		}, s.client)
		if err != nil {
			return fmt.Errorf("registering a client with %s: %w", asm.Issuer, err)
		}
		r.ClientID, r.ClientSecret = reg.ClientID, reg.ClientSecret
		if reg.TokenEndpointAuthMethod != "" {
			method = reg.TokenEndpointAuthMethod
		}
		r.AuthStyle = int(oauth2.AuthStyleInParams)
		if method == "client_secret_basic" {
			r.AuthStyle = int(oauth2.AuthStyleInHeader)
		}
	default:
		return fmt.Errorf("authorization server %s registers no clients: give oauth.clientId (and clientSecret) in the config", asm.Issuer)
	}
	return nil
}

// ErrUnsafeURL is wrapped by the error of CheckBrowserURL.
var ErrUnsafeURL = errors.New("oauth: refused to open")

// CheckBrowserURL returns an error wrapping ErrUnsafeURL unless u is one a
// browser may be handed: https, or http to a loopback host (127.0.0.0/8,
// ::1, localhost). The system's opener (xdg-open, open, rundll32) runs any
// scheme it knows — file:, smb:, ms-msdt:, ssh: — so an authorization
// server's metadata must not choose one (the class of mcp-remote's
// CVE-2025-6514). Login checks the authorization endpoint before it calls
// LoginOptions.Open; an Open that starts a program should check again.
func CheckBrowserURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("%w %q: %v", ErrUnsafeURL, u, err)
	}
	switch scheme := strings.ToLower(p.Scheme); {
	case scheme == "https" && p.Host != "":
		return nil
	case scheme == "http" && p.Host != "" && loopbackHost(p.Hostname()):
		return nil
	case scheme == "http" && p.Host != "":
		return fmt.Errorf("%w %q: scheme http to a host that is not loopback; only https (or http to 127.0.0.1, ::1 or localhost) is opened in a browser", ErrUnsafeURL, u)
	default:
		return fmt.Errorf("%w %q: scheme %q; only https (or http to 127.0.0.1, ::1 or localhost) is opened in a browser", ErrUnsafeURL, u, p.Scheme)
	}
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// redirectResult is what the browser brought back.
type redirectResult struct{ code, iss string }

// waitRedirect serves ln until the browser comes back with state, then
// returns the code. open is called once the server is up.
func waitRedirect(ctx context.Context, ln net.Listener, state string, open func() error) (*redirectResult, error) {
	type outcome struct {
		res *redirectResult
		err error
	}
	done := make(chan outcome, 1)
	finish := func(o outcome) {
		select {
		case done <- o:
		default:
		}
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		if req.URL.Path != "/callback" || q.Get("state") != state {
			// Not our redirect (a stray request, a forged one): keep waiting.
			http.Error(w, "not the redirect this login waits for", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if e := q.Get("error"); e != "" {
			desc := q.Get("error_description")
			fmt.Fprintf(w, "<!doctype html><title>toolsift</title><p>Login failed: %s %s. You can close this tab.", html.EscapeString(e), html.EscapeString(desc))
			msg := "the authorization server refused: " + e
			if desc != "" {
				msg += ": " + desc
			}
			finish(outcome{err: errors.New(msg)})
			return
		}
		if q.Get("code") == "" {
			http.Error(w, "no code in the redirect", http.StatusBadRequest)
			finish(outcome{err: errors.New("the redirect carries no authorization code")})
			return
		}
		fmt.Fprint(w, "<!doctype html><title>toolsift</title><p>Logged in. You can close this tab.")
		finish(outcome{res: &redirectResult{code: q.Get("code"), iss: q.Get("iss")}})
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-served
	}()
	if err := open(); err != nil {
		return nil, err
	}
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the browser: %w", ctx.Err())
	}
}

// scrubURL keeps a server URL's query (where keys hide) out of an error.
func scrubURL(err error, serverURL string) error {
	u, perr := url.Parse(serverURL)
	if perr != nil || (u.RawQuery == "" && u.User == nil) {
		return err
	}
	msg := err.Error()
	clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	msg = strings.ReplaceAll(msg, serverURL, clean.String())
	if u.RawQuery != "" {
		msg = strings.ReplaceAll(msg, u.RawQuery, "REDACTED")
	}
	if u.User != nil {
		msg = strings.ReplaceAll(msg, u.User.String(), "REDACTED")
	}
	return errors.New(msg)
}
