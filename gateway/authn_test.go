package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
)

// apiTokenHint is what toolsift serve's 401 says with per-user
// credentials (cmd/toolsift/token.go).
const apiTokenHint = "this toolsift serve needs your API token (Authorization: Bearer tsk_...; toolsift token create makes one)"

// behind puts h behind v as toolsift serve --tokens does: authn.Require,
// logging to log.
func behind(v authn.Verifier, log *slog.Logger, h http.Handler) http.Handler {
	return authn.Require(v, &authn.Options{Logger: log, Hint: apiTokenHint})(h)
}

func newDir(t testing.TB, path string) *store.Dir {
	t.Helper()
	d, err := store.NewDir(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestTokenIdentifiesCaller: over HTTP, with a real go-sdk client, alice's
// token makes her calls hers: her log lines and her audit records name
// her; a request without a token, or with a wrong one, gets 401. The
// secret is in no log line, error or record.
func TestTokenIdentifiesCaller(t *testing.T) {
	ctx := context.Background()
	folder := t.TempDir()
	st := newDir(t, folder)
	tokens := authn.NewTokens(st)
	secret, _, err := tokens.Create(ctx, "alice", []string{"eng"}, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	var buf testenv.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Audit:     &audit.Log{Store: st},
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Telemetry: gateway.Telemetry{Logger: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	srv := httptest.NewServer(behind(tokens, log, gw.Handler()))
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
	var recs []audit.Record
	for rec, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want 2 (one per call): %+v", len(recs), recs)
	}
	for _, r := range recs {
		want := audit.Record{Time: r.Time, User: "alice", Teams: []string{"eng"}, Tool: "math__add", Server: "math",
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

// TestSessionBoundToUser: with per-user tokens a session is its user's:
// another token of the same user (a refreshed credential) continues it,
// another user's token gets 403.
func TestSessionBoundToUser(t *testing.T) {
	ctx := context.Background()
	tokens := authn.NewTokens(store.NewMemory())
	alice1, _, _ := tokens.Create(ctx, "alice", nil, "laptop")
	alice2, _, _ := tokens.Create(ctx, "alice", nil, "desktop")
	bob, _, err := tokens.Create(ctx, "bob", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(behind(tokens, nil, p.Handler(nil)))
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
	tokens := authn.NewTokens(store.NewMemory())
	secret, tok, err := tokens.Create(ctx, "alice", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(behind(tokens, nil, p.Handler(nil)))
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

// TestOIDCOverHTTP: with Tokens and OIDC both, a go-sdk client with a JWT
// is its user in the log and the audit log, and an API token still works.
func TestOIDCOverHTTP(t *testing.T) {
	ctx := context.Background()
	is, rk := newIssuer(t)
	o, err := authn.NewOIDC(ctx, authn.OIDCOptions{Issuer: is.URL, Audience: "toolsift", TeamsClaim: "roles"})
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	tokens := authn.NewTokens(st)
	secret, _, err := tokens.Create(ctx, "bob", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf testenv.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	gw, err := gateway.Open(ctx, localTools(t), &gateway.Options{
		Audit:     &audit.Log{Store: st},
		Toolset:   toolsift.Options{NoSemantic: true, Store: store.NewMemory()},
		Telemetry: gateway.Telemetry{Logger: log},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	srv := httptest.NewServer(behind(tokens.Or(o), log, gw.Handler()))
	t.Cleanup(srv.Close)
	jwtToken := sign(t, jwt.SigningMethodRS256, "r1", rk, jwt.MapClaims{"iss": is.URL, "aud": []string{"toolsift", "other"},
		"email": "alice@example.com", "roles": "admin", "exp": time.Now().Add(time.Hour).Unix()})
	for _, bearerToken := range []string{jwtToken, secret} {
		c := httpClient(t, srv.URL, bearerToken, "2025-11-25")
		if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}}); isErr || text != "3" {
			t.Errorf("call_tool = %q (isError %v)", text, isErr)
		}
	}
	var users []string
	for rec, err := range audit.Records(ctx, st, time.Time{}) {
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, rec.User+"/"+strings.Join(rec.Teams, ","))
	}
	if diff := cmp.Diff([]string{"alice@example.com/admin", "bob/"}, users); diff != "" {
		t.Errorf("audit records' users (-want +got):\n%s", diff)
	}
	if !strings.Contains(buf.String(), "msg=call user=alice@example.com") {
		t.Errorf("no call line of alice:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), jwtToken[strings.LastIndexByte(jwtToken, '.'):]) {
		t.Errorf("the log holds the JWT:\n%s", buf.String())
	}
	if resp, _ := post(t, srv.URL, "", "Bearer "+jwtToken[:len(jwtToken)-4]+"AAAA", "", initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a JWT with a broken signature: %s, want 401", resp.Status)
	}
}

// newIssuer is an OpenID Connect issuer on an httptest server: a discovery
// document and a JWKS of one RSA key, "r1", returned to sign with.
func newIssuer(t *testing.T) (*httptest.Server, *rsa.PrivateKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{
			{"kty": "RSA", "kid": "r1", "use": "sig", "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())},
		}})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, k
}

// sign makes a JWT of claims signed by k with method, its header naming
// kid.
func sign(t *testing.T, method jwt.SigningMethod, kid string, k any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
