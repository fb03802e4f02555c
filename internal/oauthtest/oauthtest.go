// Package oauthtest runs an OAuth 2.1 authorization server and an MCP
// resource server in front of any MCP handler, on loopback httptest
// servers, for tests of MCP authorization: discovery (RFC 9728 protected
// resource metadata, RFC 8414 server metadata), dynamic client
// registration (RFC 7591), the authorization code flow with PKCE S256 and
// a strict resource parameter (RFC 8707) in every token request, refresh
// tokens that rotate, and scope step-up (403 insufficient_scope).
//
// The authorization page approves at once, so a test plays the browser
// with Browse (an HTTP GET that follows the redirect to the client's
// loopback port). The user who approves is named by the UserHeader header
// of the authorization request ("user" without one); the MCP handler sees
// that user as the go-sdk's auth.TokenInfo.UserID of every request made
// with the tokens the login got (auth.TokenInfoFromContext, or a tool
// handler's req.Extra.TokenInfo), so a test server can echo whose token
// called it.
//
//	srv := oauthtest.New(mcp.NewStreamableHTTPHandler(...), nil)
//	defer srv.Close()
//	// srv.URL is the MCP endpoint; it answers 401 until a login.
package oauthtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Options configures a Server. The zero value is usable.
type Options struct {
	// AccessTTL is how long an access token lives; default 1h.
	AccessTTL time.Duration
	// NoRefresh issues no refresh tokens.
	NoRefresh bool
	// Scopes are the scopes the resource names in its metadata and asks
	// for in its 401 challenge; default ["mcp:tools"].
	Scopes []string
	// ToolScopes maps a tool's name to a scope its tools/call needs
	// besides: without it the resource answers 403 insufficient_scope.
	ToolScopes map[string]string
	// Deny makes the authorization page refuse (error=access_denied), as
	// a user who clicks "Deny" does.
	Deny bool
	// Legacy serves the 2025-03-26 authorization shape: no protected
	// resource metadata and no authorization server metadata; the
	// authorization server is the MCP server's origin, with its endpoints
	// at /authorize, /token and /register there, a bare "Bearer"
	// challenge, and no iss in the authorization response.
	Legacy bool
	// IDToken adds an OpenID Connect id_token to every token response
	// (code exchanges and refreshes): a JWT naming the issuer (iss), the
	// user who approved (sub, as UserHeader named them), the client (aud)
	// and when it expires (exp), signed with HS256 under a key of the
	// server's own, as an authorization server that says who approved
	// does. Without it the tokens are opaque and say nothing of the user.
	IDToken bool
	// Only2026 refuses, with 400 and a JSON-RPC error, a POST without the
	// Mcp-Protocol-Version header before it asks for a token, as a server
	// of MCP 2026-07-28 only may: its clients send the header on every
	// request, and an initialize of 2025-11-25 has none.
	Only2026 bool
}

// Server is an authorization server (AS) and a resource server (RS) on two
// loopback ports. Its methods are safe for concurrent use.
type Server struct {
	// URL is the MCP endpoint (RS.URL + "/mcp").
	URL string
	// AS and RS are the two servers.
	AS, RS *httptest.Server

	opts Options
	key  [32]byte // signs id_tokens

	mu       sync.Mutex
	clients  map[string]*client
	codes    map[string]*grant
	access   map[string]*grant
	refresh  map[string]*grant
	counts   Counts
	bearers  []string // Authorization headers the AS received
	resource []string // resource parameters of token requests
}

// Counts are what the server saw.
type Counts struct {
	Registrations, Authorizations, CodeExchanges, Refreshes int
	// Unauthorized counts the RS's 401 and 403 answers.
	Unauthorized int
}

type client struct {
	id, secret string
	redirects  []string
}

// UserHeader names the user who approves at the authorization page: a
// test's browser sends it with the authorization request.
const UserHeader = "X-Oauthtest-User"

type grant struct {
	client, redirect, challenge, resource, subject string
	scopes                                         []string
	expiry                                         time.Time
}

// New starts a Server that serves mcp (a streamable HTTP handler) at
// /mcp behind bearer tokens it issues.
func New(mcp http.Handler, opts *Options) *Server {
	s := &Server{clients: map[string]*client{}, codes: map[string]*grant{}, access: map[string]*grant{}, refresh: map[string]*grant{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.AccessTTL == 0 {
		s.opts.AccessTTL = time.Hour
	}
	if len(s.opts.Scopes) == 0 {
		s.opts.Scopes = []string{"mcp:tools"}
	}
	rand.Read(s.key[:])
	as := http.NewServeMux()
	as.HandleFunc("GET /.well-known/oauth-authorization-server", s.asMetadata)
	as.HandleFunc("POST /register", s.register)
	as.HandleFunc("GET /authorize", s.authorize)
	as.HandleFunc("POST /token", s.token)
	s.AS = httptest.NewServer(as)
	rs := http.NewServeMux()
	if s.opts.Legacy {
		rs.HandleFunc("POST /register", s.register)
		rs.HandleFunc("GET /authorize", s.authorize)
		rs.HandleFunc("POST /token", s.token)
	} else {
		rs.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", s.rsMetadata)
	}
	rs.Handle("/mcp", s.protect(mcp))
	s.RS = httptest.NewServer(rs)
	// localhost, as users write it; the metadata must name the same.
	s.URL = strings.Replace(s.RS.URL, "127.0.0.1", "localhost", 1) + "/mcp"
	return s
}

// Close stops both servers, ending the requests in flight (a client's
// open event stream among them).
func (s *Server) Close() {
	s.RS.CloseClientConnections()
	s.RS.Close()
	s.AS.Close()
}

// Counts returns what the server saw so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Resources returns the resource parameter of every token request, in
// order ("" where there was none).
func (s *Server) Resources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resource)
}

// ASBearers returns the Authorization headers the authorization server
// received with Bearer tokens: a client must send none there.
func (s *Server) ASBearers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bearers)
}

// ExpireAccessTokens makes every access token issued so far expired.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.access {
		g.expiry = time.Now().Add(-time.Second)
	}
}

// Revoke forgets every access and refresh token issued so far, as an
// authorization server does when the user revokes the client's access.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

// Browse plays the user's browser: it follows authURL (the authorization
// page approves at once) and the redirect to the client's loopback port,
// and fails unless the client's page answers 200.
func Browse(authURL string) error {
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("browsing %s ended at %s with %s: %s", authURL, resp.Request.URL, resp.Status, body)
	}
	return nil
}

func (s *Server) issuer() string { return s.AS.URL }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (s *Server) asMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer":                                         s.issuer(),
		"authorization_endpoint":                         s.issuer() + "/authorize",
		"token_endpoint":                                 s.issuer() + "/token",
		"registration_endpoint":                          s.issuer() + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_post"},
		"scopes_supported":                               append(slices.Clone(s.opts.Scopes), "offline_access"),
		"authorization_response_iss_parameter_supported": true,
	})
}

func (s *Server) rsMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"resource":              s.URL,
		"authorization_servers": []string{s.issuer()},
		"scopes_supported":      s.opts.Scopes,
	})
}

func (s *Server) noteBearer(r *http.Request) {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(strings.ToLower(h), "bearer") {
		s.mu.Lock()
		s.bearers = append(s.bearers, h)
		s.mu.Unlock()
	}
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	s.noteBearer(r)
	var meta struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
		oauthError(w, 400, "invalid_client_metadata", "redirect_uris is required")
		return
	}
	c := &client{id: rand.Text(), redirects: meta.RedirectURIs}
	resp := map[string]any{"client_id": c.id, "redirect_uris": c.redirects, "token_endpoint_auth_method": "none"}
	if meta.AuthMethod != "none" {
		c.secret = rand.Text()
		resp["client_secret"], resp["token_endpoint_auth_method"] = c.secret, "client_secret_post"
	}
	s.mu.Lock()
	s.clients[c.id] = c
	s.counts.Registrations++
	s.mu.Unlock()
	writeJSON(w, 201, resp)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[q.Get("client_id")]
	if c == nil || !slices.Contains(c.redirects, q.Get("redirect_uri")) {
		http.Error(w, "unknown client or redirect_uri", 400)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	v := url.Values{"state": {q.Get("state")}}
	if !s.opts.Legacy {
		v.Set("iss", s.issuer())
	}
	switch {
	case s.opts.Deny:
		v.Set("error", "access_denied")
		v.Set("error_description", "the user said no")
	case q.Get("response_type") != "code":
		v.Set("error", "unsupported_response_type")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		v.Set("error", "invalid_request")
		v.Set("error_description", "PKCE with S256 is required")
	case q.Get("resource") != s.URL:
		v.Set("error", "invalid_target")
		v.Set("error_description", fmt.Sprintf("resource %q is not %q", q.Get("resource"), s.URL))
	default:
		code := rand.Text()
		subject := r.Header.Get(UserHeader)
		if subject == "" {
			subject = "user"
		}
		s.codes[code] = &grant{client: c.id, redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
			resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope")), subject: subject}
		s.counts.Authorizations++
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.noteBearer(r)
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resource = append(s.resource, f.Get("resource"))
	c := s.clients[f.Get("client_id")]
	if c == nil || c.secret != f.Get("client_secret") {
		oauthError(w, 401, "invalid_client", "unknown client or wrong secret")
		return
	}
	if f.Get("resource") != s.URL {
		oauthError(w, 400, "invalid_target", fmt.Sprintf("resource %q is not %q", f.Get("resource"), s.URL))
		return
	}
	var g *grant
	switch f.Get("grant_type") {
	case "authorization_code":
		g = s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case g == nil || g.client != c.id:
			oauthError(w, 400, "invalid_grant", "unknown code")
			return
		case g.redirect != f.Get("redirect_uri"):
			oauthError(w, 400, "invalid_grant", "redirect_uri differs")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			oauthError(w, 400, "invalid_grant", "code_verifier does not match the challenge")
			return
		}
		s.counts.CodeExchanges++
	case "refresh_token":
		g = s.refresh[f.Get("refresh_token")]
		if g == nil || g.client != c.id {
			oauthError(w, 400, "invalid_grant", "unknown or revoked refresh token")
			return
		}
		delete(s.refresh, f.Get("refresh_token")) // rotation: each is used once
		s.counts.Refreshes++
	default:
		oauthError(w, 400, "unsupported_grant_type", f.Get("grant_type"))
		return
	}
	access := rand.Text()
	ag := *g
	ag.expiry = time.Now().Add(s.opts.AccessTTL)
	s.access[access] = &ag
	resp := map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(s.opts.AccessTTL.Seconds()), "scope": strings.Join(g.scopes, " ")}
	if !s.opts.NoRefresh {
		rt := rand.Text()
		s.refresh[rt] = g
		resp["refresh_token"] = rt
	}
	if s.opts.IDToken {
		resp["id_token"] = s.idToken(g)
	}
	writeJSON(w, 200, resp)
}

// idToken is the id_token of a grant (Options.IDToken).
func (s *Server) idToken(g *grant) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + enc(map[string]any{
		"iss": s.issuer(), "sub": g.subject, "aud": g.client,
		"iat": time.Now().Unix(), "exp": time.Now().Add(s.opts.AccessTTL).Unix(),
	})
	mac := hmac.New(sha256.New, s.key[:])
	mac.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// protect answers 401 without a valid token for this resource, 403 when a
// tools/call needs a scope the token lacks.
func (s *Server) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Only2026 && r.Method == http.MethodPost && r.Header.Get("Mcp-Protocol-Version") == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"Missing MCP-Protocol-Version header"}}`)
			return
		}
		challenge := fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, s.RS.URL+"/.well-known/oauth-protected-resource/mcp", strings.Join(s.opts.Scopes, " "))
		if s.opts.Legacy {
			challenge = "Bearer"
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		g := s.access[tok]
		valid := ok && g != nil && time.Now().Before(g.expiry) && g.resource == s.URL
		if !valid {
			s.counts.Unauthorized++
		}
		s.mu.Unlock()
		if !valid {
			if ok {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if len(s.opts.ToolScopes) > 0 && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			json.Unmarshal(body, &msg)
			if need := s.opts.ToolScopes[msg.Params.Name]; msg.Method == "tools/call" && need != "" && !slices.Contains(g.scopes, need) {
				s.mu.Lock()
				s.counts.Unauthorized++
				s.mu.Unlock()
				want := append(slices.Clone(g.scopes), need)
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
					strings.Join(want, " "), s.RS.URL+"/.well-known/oauth-protected-resource/mcp"))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		// The MCP handler learns whose token it is, as behind the go-sdk's
		// own bearer middleware: the SDK binds a session to its UserID.
		info := &auth.TokenInfo{UserID: g.subject, Scopes: slices.Clone(g.scopes), Expiration: g.expiry}
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return info, nil
		}, nil)(next).ServeHTTP(w, r)
	})
}
