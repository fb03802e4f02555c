package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServeOIDC: serve --oidc-issuer --oidc-audience --oidc-user-claim
// accepts a JWT the issuer signed, its claim naming the user in the log
// and the audit log, and refuses one made for another audience.
func TestServeOIDC(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var issuer *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": issuer.URL, "jwks_uri": issuer.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		raw, _ := key.PublicKey.Bytes()
		b64 := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "EC", "kid": "k1", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}}})
	})
	issuer = httptest.NewServer(mux)
	defer issuer.Close()
	jwtFor := func(aud string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": issuer.URL, "aud": aud, "preferred_username": "carol",
			"groups": []string{"sre"}, "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	cache := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.WaitLimit())
	defer cancel()
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	logs := &logWatch{wrote: make(chan struct{}, 1)}
	e := &env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: logs, getenv: func(string) string { return "" }}
	addr, done := startServe(serveCtx, t, e, logs, "serve", "--config", upstreamConfig(t, "1"), "--cache-dir", cache, "--listen", "127.0.0.1:0",
		"--oidc-issuer", issuer.URL, "--oidc-audience", "toolsift", "--oidc-user-claim", "preferred_username", "--audit",
		"--connect-timeout", testenv.WaitLimit().String())
	url := "http://" + addr + "/mcp"
	logs.waitFor(t, `msg="server ready" server=up`, ctx.Done())

	hc := &http.Client{Transport: bearer{jwtFor("toolsift"), http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect with the JWT: %v\n%s", err, logs.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__lookup", "arguments": map[string]any{}}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	cs.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+jwtFor("another-app"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a JWT for another audience: %s, want 401", resp.Status)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("serve: exit %d\n%s", code, logs.String())
	}
	if !strings.Contains(logs.String(), "msg=call user=carol") {
		t.Errorf("no call line of carol:\n%s", logs.String())
	}
	code, out, stderr := runCmd(t, "audit", "--json", "--store", cache)
	var rec audit.Record
	if err := json.Unmarshal([]byte(out), &rec); code != 0 || err != nil || rec.User != "carol" || strings.Join(rec.Teams, ",") != "sre" {
		t.Errorf("audit: exit %d, %q (%v) %s", code, out, err, stderr)
	}
}
