package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// OIDCOptions configure NewOIDC.
type OIDCOptions struct {
	// Issuer is the OpenID Connect issuer's URL (https, or http on
	// loopback), exactly as its tokens' "iss" claim says it. Its keys are
	// found through Issuer + "/.well-known/openid-configuration".
	Issuer string
	// Audience is what a token's "aud" claim must hold: the client id or
	// API identifier the issuer gives this gateway. Required: without it
	// a token the issuer made for any other application would do.
	Audience string
	// UserClaim names the claim that is the user; default "email". Its
	// value must be a user name Tokens would accept (letters, digits and
	// -_.@+), else the token is refused naming the claim.
	UserClaim string
	// TeamsClaim names the claim that lists the user's teams (an array of
	// strings, or one string); default "groups". Teams outside the names
	// Tokens accept are left out; a missing claim means no teams.
	TeamsClaim string
	// HTTPClient fetches the discovery document and the keys; default a
	// client with a 10 s timeout. Only Issuer's discovery URL and the
	// jwks_uri it names are fetched.
	HTTPClient *http.Client
}

// OIDC validates bearer JWTs an OpenID Connect issuer signed, against the
// keys of its JWKS, and turns their claims into an Identity: a Verifier
// (Require it, alone or beside API tokens: Tokens.Or). It is safe for
// concurrent use.
type OIDC struct {
	opts    OIDCOptions
	jwksURL string
	now     func() time.Time

	mu        sync.Mutex
	keys      map[string]crypto.PublicKey // by kid
	fetched   time.Time                   // when keys were last fetched
	fetchErr  error                       // of the last fetch
	fetchLock chan struct{}               // one fetch at a time
}

// oidcAlgorithms are the signatures accepted: asymmetric only (an
// HMAC-signed token would be signed with a secret the gateway does not
// have, and "none" is never accepted).
var oidcAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// jwksRefetch is how soon after a fetch the keys are fetched again for a
// token whose key id they lack (a key rotation); tokens made up with
// random key ids cost at most one fetch per this interval.
const jwksRefetch = 30 * time.Second

// maxOIDCResponse bounds the discovery document and the key set.
const maxOIDCResponse = 1 << 20

// NewOIDC reads the issuer's discovery document (the only request it
// makes now; the keys are fetched at the first token) and returns the
// validator. It fails on options it cannot use, naming them, and when the
// discovery document cannot be had or names another issuer.
func NewOIDC(ctx context.Context, opts OIDCOptions) (*OIDC, error) {
	u, err := url.Parse(opts.Issuer)
	switch {
	case opts.Issuer == "":
		return nil, fmt.Errorf("%w: OIDC Issuer is empty", ErrOptions)
	case err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname())):
		return nil, fmt.Errorf("%w: OIDC Issuer %q: want an https URL (http on loopback only)", ErrOptions, opts.Issuer)
	case opts.Audience == "":
		return nil, fmt.Errorf("%w: OIDC Audience is empty: tokens the issuer made for any other application would be accepted", ErrOptions)
	}
	if opts.UserClaim == "" {
		opts.UserClaim = "email"
	}
	if opts.TeamsClaim == "" {
		opts.TeamsClaim = "groups"
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	o := &OIDC{opts: opts, now: time.Now, fetchLock: make(chan struct{}, 1)}
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := o.getJSON(ctx, strings.TrimSuffix(opts.Issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, fmt.Errorf("authn: OIDC issuer %s: discovery: %w", opts.Issuer, err)
	}
	if disc.Issuer != opts.Issuer {
		return nil, fmt.Errorf("authn: OIDC issuer %s: its discovery document names issuer %q", opts.Issuer, disc.Issuer)
	}
	ju, err := url.Parse(disc.JWKSURI)
	if err != nil || ju.Host == "" || !(ju.Scheme == "https" || ju.Scheme == "http" && isLoopbackHost(ju.Hostname())) {
		return nil, fmt.Errorf("authn: OIDC issuer %s: jwks_uri %q: want an https URL", opts.Issuer, disc.JWKSURI)
	}
	o.jwksURL = disc.JWKSURI
	return o, nil
}

// Verify returns the Identity of the bearer JWT token, or an error saying
// why it is refused (never holding the token): a bad signature or
// algorithm, another issuer or audience, expired or not yet valid, no
// user claim. Errors of the issuer's key endpoint do not wrap
// ErrUnknownToken; the others do.
func (o *OIDC) Verify(ctx context.Context, token string) (Identity, error) {
	var keyErr error
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, err := o.key(ctx, kid)
		if err != nil {
			keyErr = err
		}
		return key, err
	}, jwt.WithValidMethods(oidcAlgorithms), jwt.WithIssuer(o.opts.Issuer), jwt.WithAudience(o.opts.Audience),
		jwt.WithExpirationRequired(), jwt.WithLeeway(time.Minute), jwt.WithTimeFunc(o.now))
	if keyErr != nil {
		return Identity{}, keyErr
	}
	if err != nil {
		return Identity{}, fmt.Errorf("%w: JWT: %v", ErrUnknownToken, err)
	}
	user, _ := claims[o.opts.UserClaim].(string)
	if err := checkPrincipal("user", user); err != nil {
		return Identity{}, fmt.Errorf("%w: JWT claim %q: %v", ErrUnknownToken, o.opts.UserClaim, err)
	}
	id := Identity{User: user}
	switch v := claims[o.opts.TeamsClaim].(type) {
	case string:
		if checkPrincipal("team", v) == nil {
			id.Teams = []string{v}
		}
	case []any:
		for _, t := range v {
			if s, ok := t.(string); ok && checkPrincipal("team", s) == nil {
				id.Teams = append(id.Teams, s)
			}
		}
	}
	return id, nil
}

// key returns the issuer's public key kid, fetching the key set when it is
// not known and was not fetched within jwksRefetch.
func (o *OIDC) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	for attempt := 0; ; attempt++ {
		o.mu.Lock()
		k, ok := o.keys[kid]
		stale := o.keys == nil || o.now().Sub(o.fetched) >= jwksRefetch
		lastErr := o.fetchErr
		o.mu.Unlock()
		switch {
		case ok:
			return k, nil
		case !stale || attempt > 0:
			if lastErr != nil {
				return nil, lastErr
			}
			return nil, fmt.Errorf("%w: JWT key id %q is not among the issuer's keys", ErrUnknownToken, kid)
		}
		select {
		case o.fetchLock <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		o.mu.Lock()
		again := o.keys == nil || o.now().Sub(o.fetched) >= jwksRefetch // another fetch may have just ended
		o.mu.Unlock()
		if again {
			keys, err := o.fetchKeys(ctx)
			o.mu.Lock()
			o.fetched, o.fetchErr = o.now(), err
			if err == nil {
				o.keys = keys
			} else if o.keys == nil {
				o.keys = map[string]crypto.PublicKey{}
			}
			o.mu.Unlock()
		}
		<-o.fetchLock
	}
}

// fetchKeys reads the issuer's JWKS. Keys it cannot use (another type,
// curve or use) are left out.
func (o *OIDC) fetchKeys(ctx context.Context) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := o.getJSON(ctx, o.jwksURL, &set); err != nil {
		return nil, fmt.Errorf("authn: OIDC issuer %s: keys: %w", o.opts.Issuer, err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if pk, err := k.publicKey(); err == nil {
			keys[k.Kid] = pk
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("authn: OIDC issuer %s: no signing key it lists is usable (RSA, EC P-256/384/521, Ed25519)", o.opts.Issuer)
	}
	return keys, nil
}

// getJSON gets u and decodes its JSON body into v.
func (o *OIDC) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOIDCResponse+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(b) > maxOIDCResponse {
		return fmt.Errorf("GET %s: over %d bytes", u, maxOIDCResponse)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// jwk is one key of a JWKS (RFC 7517, 7518, 8037): the public parts only.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func (k jwk) publicKey() (crypto.PublicKey, error) {
	b64 := base64.RawURLEncoding.DecodeString
	switch k.Kty {
	case "RSA":
		n, err1 := b64(k.N)
		e, err2 := b64(k.E)
		if err := errors.Join(err1, err2); err != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
			return nil, fmt.Errorf("RSA key %q: bad or short n or e", k.Kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		var c elliptic.Curve
		switch k.Crv {
		case "P-256":
			c = elliptic.P256()
		case "P-384":
			c = elliptic.P384()
		case "P-521":
			c = elliptic.P521()
		default:
			return nil, fmt.Errorf("EC key %q: curve %q", k.Kid, k.Crv)
		}
		x, err1 := b64(k.X)
		y, err2 := b64(k.Y)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("EC key %q: %w", k.Kid, err)
		}
		size := (c.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, fmt.Errorf("EC key %q: coordinates of the wrong size", k.Kid)
		}
		// The uncompressed point form, which ecdsa.ParseUncompressedPublicKey
		// checks is on the curve.
		point := append([]byte{4}, append(x, y...)...)
		return ecdsa.ParseUncompressedPublicKey(c, point)
	case "OKP":
		x, err := b64(k.X)
		if k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("OKP key %q: want an Ed25519 key", k.Kid)
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, fmt.Errorf("key %q: type %q", k.Kid, k.Kty)
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
