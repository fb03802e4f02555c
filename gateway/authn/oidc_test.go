package authn_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/gateway/authn"
)

// issuer is an OpenID Connect issuer on an httptest server: a discovery
// document and a JWKS of the keys it signs with.
type issuer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]crypto.Signer // by kid
	fetches atomic.Int64             // JWKS requests
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{keys: map[string]crypto.Signer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		var keys []map[string]string
		b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
		for kid, k := range is.keys {
			switch pub := k.Public().(type) {
			case *rsa.PublicKey:
				keys = append(keys, map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())})
			case *ecdsa.PublicKey:
				raw, _ := pub.Bytes()
				keys = append(keys, map[string]string{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])})
			case ed25519.PublicKey:
				keys = append(keys, map[string]string{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": b64(pub)})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) addKey(t *testing.T, kid string, k crypto.Signer) {
	t.Helper()
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
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

var (
	rsaKeyOnce sync.Once
	rsaKey     *rsa.PrivateKey
)

func testRSAKey(t *testing.T) *rsa.PrivateKey {
	rsaKeyOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	})
	return rsaKey
}

// TestOIDC: JWTs the issuer signed with any of its keys (RSA, P-256,
// Ed25519) give the Identity their claims name; every other token is
// refused with ErrUnknownToken: another audience or issuer, expired, no
// expiry, an unknown key, alg none, HMAC with the public key as secret,
// no user claim.
func TestOIDC(t *testing.T) {
	ctx := context.Background()
	is := newIssuer(t)
	rk := testRSAKey(t)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edk, _ := ed25519.GenerateKey(rand.Reader)
	is.addKey(t, "r1", rk)
	is.addKey(t, "e1", ek)
	is.addKey(t, "d1", edk)
	o, err := authn.NewOIDC(ctx, authn.OIDCOptions{Issuer: is.srv.URL, Audience: "toolsift"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	valid := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": is.srv.URL, "aud": "toolsift", "sub": "auth0|42", "email": "alice@example.com",
			"groups": []string{"eng", "Team With Space", "ops"}, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	}
	want := authn.Identity{User: "alice@example.com", Teams: []string{"eng", "ops"}}
	for _, c := range []struct {
		name   string
		method jwt.SigningMethod
		kid    string
		key    any
	}{
		{"RS256", jwt.SigningMethodRS256, "r1", rk},
		{"PS256", jwt.SigningMethodPS256, "r1", rk},
		{"ES256", jwt.SigningMethodES256, "e1", ek},
		{"EdDSA", jwt.SigningMethodEdDSA, "d1", edk},
	} {
		id, err := o.Verify(ctx, sign(t, c.method, c.kid, c.key, valid()))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(want, id); diff != "" {
			t.Errorf("%s: Identity (-want +got):\n%s", c.name, diff)
		}
	}
	if n := is.fetches.Load(); n != 1 {
		t.Errorf("%d JWKS fetches for 4 tokens of known keys, want 1", n)
	}

	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	with := func(k string, v any) jwt.MapClaims {
		c := valid()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	for _, c := range []struct {
		name  string
		token string
		want  string
	}{
		{"another audience", sign(t, jwt.SigningMethodRS256, "r1", rk, with("aud", "other-app")), "audience"},
		{"another issuer", sign(t, jwt.SigningMethodRS256, "r1", rk, with("iss", "https://evil.example")), "issuer"},
		{"expired", sign(t, jwt.SigningMethodRS256, "r1", rk, with("exp", now.Add(-time.Hour).Unix())), "expired"},
		{"no expiry", sign(t, jwt.SigningMethodRS256, "r1", rk, with("exp", nil)), "exp"},
		{"not yet valid", sign(t, jwt.SigningMethodRS256, "r1", rk, with("nbf", now.Add(time.Hour).Unix())), "not valid yet"},
		{"signed by another key", sign(t, jwt.SigningMethodES256, "e1", other, valid()), "signature"},
		{"alg none", sign(t, jwt.SigningMethodNone, "r1", jwt.UnsafeAllowNoneSignatureType, valid()), "signing method"},
		{"HMAC keyed with the public key", sign(t, jwt.SigningMethodHS256, "r1", pubDER, valid()), "signing method"},
		{"no email", sign(t, jwt.SigningMethodRS256, "r1", rk, with("email", nil)), `claim "email"`},
		{"a user with a space", sign(t, jwt.SigningMethodRS256, "r1", rk, with("email", "alice smith")), `claim "email"`},
		{"not a JWT", "tsk_nothing", "malformed"},
	} {
		_, err := o.Verify(ctx, c.token)
		if !errors.Is(err, authn.ErrUnknownToken) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrUnknownToken saying %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), c.token) {
			t.Errorf("%s: the error holds the token", c.name)
		}
	}

	// A key the set lacks: fetched again at most once per interval, so
	// that made-up key ids cost no flood of requests; a rotation is
	// picked up once the interval has passed.
	fetches := is.fetches.Load()
	clock := now.Add(time.Minute) // past the refetch interval
	o.SetClock(func() time.Time { return clock })
	rotated, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	is.addKey(t, "e2", rotated)
	tok := sign(t, jwt.SigningMethodES256, "e2", rotated, valid())
	if _, err := o.Verify(ctx, tok); err != nil {
		t.Errorf("a token of a new key, the set last fetched long ago: %v", err)
	}
	for range 5 {
		if _, err := o.Verify(ctx, sign(t, jwt.SigningMethodES256, "made-up", other, valid())); !errors.Is(err, authn.ErrUnknownToken) {
			t.Errorf("an unknown key id: %v", err)
		}
	}
	if n := is.fetches.Load() - fetches; n != 1 {
		t.Errorf("%d JWKS fetches for a new key and 5 unknown key ids, want 1", n)
	}
}

func TestNewOIDCRefuses(t *testing.T) {
	ctx := context.Background()
	is := newIssuer(t)
	for _, c := range []struct {
		opts authn.OIDCOptions
		want string
	}{
		{authn.OIDCOptions{Audience: "a"}, "Issuer is empty"},
		{authn.OIDCOptions{Issuer: "http://idp.example.com", Audience: "a"}, "want an https URL"},
		{authn.OIDCOptions{Issuer: is.srv.URL}, "Audience is empty"},
		{authn.OIDCOptions{Issuer: is.srv.URL + "/", Audience: "a"}, "names issuer"},
		{authn.OIDCOptions{Issuer: is.srv.URL + "/nothing", Audience: "a"}, "404"},
	} {
		if _, err := authn.NewOIDC(ctx, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewOIDC(%+v): %v, want an error saying %q", c.opts, err, c.want)
		}
	}
}
