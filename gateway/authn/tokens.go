package authn

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/store"
)

// ErrUnknownToken is wrapped by the error of Tokens.Verify for a secret
// that is not a live API token (malformed, never created, or revoked), of
// Tokens.Revoke for an id no token has, and of OIDC.Verify for a JWT it
// refuses.
var ErrUnknownToken = errors.New("authn: invalid, unknown or revoked token")

// TokenPrefix starts every API token's secret: "tsk_", the token's id
// (12 hex digits), "_", and 43 characters of base64url (32 random bytes).
// The prefix lets secret scanners find leaked tokens; the id lets a person
// tell which token a secret is without the store.
const TokenPrefix = "tsk_"

// TokenCacheTTL is how long Verify trusts what it read of a token: a token
// revoked on another replica (another process over the same store) is
// refused there at most this long after. A Revoke through the same Tokens
// takes effect at once.
const TokenCacheTTL = 500 * time.Millisecond

// tokenOutageTTL is how long, since Verify last read a token from the
// store, it keeps accepting that token from memory while the store cannot
// be read (a database outage, a store slower than tokenReadTimeout): a
// gateway goes on serving the callers it knows. So a token revoked
// through another replica while this one cannot reach the store is
// accepted here at most this long after it was last read. A revocation
// seen before (through the same Tokens, or reported by Watch) is never
// undone so, and a token never read is refused (the error is the store's:
// Require answers 503).
const tokenOutageTTL = 5 * time.Minute

// tokenReadTimeout bounds a store read of Verify: a store that does not
// answer (a partitioned network) is an outage too, not a request that
// hangs.
const tokenReadTimeout = 2 * time.Second

// Token is what the store keeps of an API token and what List shows:
// never its secret, nor the secret's hash.
type Token struct {
	// ID names the token (12 hex digits, also in its secret): what
	// toolsift token revoke takes.
	ID string `json:"id"`
	// User and Teams are the Identity a request with the token has.
	User  string   `json:"user"`
	Teams []string `json:"teams,omitempty"`
	// Name says what the token is for ("laptop", "ci").
	Name string `json:"name,omitempty"`
	// Created is when it was made.
	Created time.Time `json:"created"`
}

// tokenRecord is a token as stored: under tokens/hash/HASH.json (what
// Verify reads; HASH is the hex SHA-256 of the secret) and under
// tokens/id/ID.json (what List and Revoke read), both with the hash, so
// that Revoke finds the record Verify reads.
type tokenRecord struct {
	Token
	Hash string `json:"hash"`
}

// Tokens are per-user API tokens, kept in a store.Store that every
// replica shares: Create makes one and returns its secret once, Verify
// turns a secret into its Identity (Tokens is a Verifier: Require them
// with Require), Revoke ends one.
//
// Only the SHA-256 of a secret is stored. A secret is 32 random bytes, so
// no password hash (bcrypt, argon2) is needed: there is nothing to guess a
// dictionary from, and a fast hash keeps Verify cheap on every request.
//
// Verify caches what it read for TokenCacheTTL, so that a warm request
// reads no store row; a token revoked elsewhere is refused within that
// time, or at once while Watch runs over a store that is a store.Watcher;
// a Verify whose read was under way when a token was revoked (here, or as
// the watch reports) answers its own request as it read but caches
// nothing, so no read from before a revocation outlives it. While the
// store cannot be read, a token read before is accepted from memory for
// 5 minutes since that read. It is safe for concurrent use.
type Tokens struct {
	s      store.Store
	now    func() time.Time
	outage time.Duration // tokenOutageTTL, but in tests

	mu    sync.Mutex
	cache map[[32]byte]cachedToken
	// known holds the live tokens read from the store, and when: what
	// Verify accepts while the store cannot be read. forget and forgetAll
	// drop from it what they drop from cache.
	known map[[32]byte]knownToken
	// forgot counts forget and forgetAll calls: a Verify whose store read
	// began before one of them (a revocation here, or reported by the
	// store's watch) does not cache what it read, which may be the token
	// as it was before.
	forgot uint64
}

// knownToken is a live token as Verify last read it from the store.
type knownToken struct {
	id   Identity
	read time.Time
}

// cachedToken is what Verify read of one secret's hash, until when it is
// trusted.
type cachedToken struct {
	id    Identity
	live  bool // false: no such token (unknown or revoked)
	until time.Time
}

// maxCachedTokens bounds the cache: past it, it starts empty again (a
// client spraying made-up tokens costs store reads, never memory).
const maxCachedTokens = 10000

// NewTokens returns the API tokens kept in s.
func NewTokens(s store.Store) *Tokens {
	return &Tokens{s: s, now: time.Now, outage: tokenOutageTTL, cache: map[[32]byte]cachedToken{}, known: map[[32]byte]knownToken{}}
}

const (
	tokenIDLen     = 12 // hex digits
	tokenSecretLen = 43 // base64url of 32 bytes, unpadded
	tokenLen       = len(TokenPrefix) + tokenIDLen + 1 + tokenSecretLen
)

// Create makes an API token for user, a member of teams, named name
// (what it is for; may be empty), and returns its secret, which is shown
// this once and kept nowhere, and the token as List shows it. User and
// team names are 1 to 128 letters, digits and -_.@+ (an email address
// fits); a name is at most 200 printable characters.
func (t *Tokens) Create(ctx context.Context, user string, teams []string, name string) (secret string, tok Token, err error) {
	if err := checkPrincipal("user", user); err != nil {
		return "", Token{}, err
	}
	teams = slices.Clone(teams)
	slices.Sort(teams)
	teams = slices.Compact(teams)
	for _, team := range teams {
		if err := checkPrincipal("team", team); err != nil {
			return "", Token{}, err
		}
	}
	if err := checkTokenName(name); err != nil {
		return "", Token{}, err
	}
	var raw [6 + 32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("authn: create token: %w", err)
	}
	id := hex.EncodeToString(raw[:6])
	secret = TokenPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(raw[6:])
	sum := sha256.Sum256([]byte(secret))
	rec := tokenRecord{
		Token: Token{ID: id, User: user, Teams: teams, Name: name, Created: t.now().UTC().Truncate(time.Second)},
		Hash:  hex.EncodeToString(sum[:]),
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", Token{}, fmt.Errorf("authn: create token: %w", err)
	}
	// The id's record first: a token is listed (so revocable) before it
	// works, whatever fails in between.
	if _, err := t.s.Get(ctx, tokenIDKey(id)); err == nil {
		return "", Token{}, fmt.Errorf("authn: create token: id %s taken; try again", id)
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", Token{}, fmt.Errorf("authn: create token: %w", err)
	}
	if err := t.s.Put(ctx, tokenIDKey(id), b); err != nil {
		return "", Token{}, fmt.Errorf("authn: create token: %w", err)
	}
	if err := t.s.Put(ctx, tokenHashKey(rec.Hash), b); err != nil {
		return "", Token{}, fmt.Errorf("authn: create token: %w", err)
	}
	t.forget(sum)
	return secret, rec.Token, nil
}

// List returns the tokens, oldest first (by id for those made in the same
// second).
func (t *Tokens) List(ctx context.Context) ([]Token, error) {
	keys, err := t.s.List(ctx, "tokens/id/")
	if err != nil {
		return nil, fmt.Errorf("authn: list tokens: %w", err)
	}
	var out []Token
	for _, k := range keys {
		rec, err := t.read(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			continue // revoked while listing
		}
		if err != nil {
			return nil, fmt.Errorf("authn: list tokens: %w", err)
		}
		out = append(out, rec.Token)
	}
	slices.SortStableFunc(out, func(a, b Token) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Revoke ends the token id (as List shows it, or the start of its secret:
// "tsk_ID_..." is accepted): this process refuses it at once, other
// replicas within TokenCacheTTL. An id no token has is an error wrapping
// ErrUnknownToken.
func (t *Tokens) Revoke(ctx context.Context, id string) error {
	id = strings.TrimPrefix(strings.TrimSpace(id), TokenPrefix)
	if len(id) > tokenIDLen && id[tokenIDLen] == '_' {
		id = id[:tokenIDLen]
	}
	if !isTokenID(id) {
		return fmt.Errorf("%w: %q is not a token id (12 hex digits)", ErrUnknownToken, id)
	}
	rec, err := t.read(ctx, tokenIDKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: no token has id %s", ErrUnknownToken, id)
	}
	if err != nil {
		return fmt.Errorf("authn: revoke token %s: %w", id, err)
	}
	// The hash's record first: the token stops working before it leaves
	// the list, so a failure in between leaves it listed, to revoke again.
	sum, err := hex.DecodeString(rec.Hash)
	if err != nil || len(sum) != sha256.Size {
		// Not dropped from the list: what its hash record is cannot be told.
		return fmt.Errorf("authn: revoke token %s: its record %s is damaged (no valid hash); remove the token's tokens/hash/ record by hand", id, tokenIDKey(id))
	}
	if err := t.s.Delete(ctx, tokenHashKey(rec.Hash)); err != nil {
		return fmt.Errorf("authn: revoke token %s: %w", id, err)
	}
	t.forget([32]byte(sum))
	if err := t.s.Delete(ctx, tokenIDKey(id)); err != nil {
		return fmt.Errorf("authn: revoke token %s: %w", id, err)
	}
	return nil
}

// Verify returns the Identity of the API token secret, or an error
// wrapping ErrUnknownToken when it is not a live token. The error never
// holds the secret. What it read is trusted for TokenCacheTTL. When the
// store cannot be read (it fails, or takes over 2 seconds), a token read
// live within the last 5 minutes is accepted from memory (and the store
// tried again after TokenCacheTTL); any other token gets the store's
// error.
//
// Its time does not depend on the secret beyond its form: the secret is
// hashed first, and only its hash is looked up (in the cache, then the
// store) and compared, in constant time.
func (t *Tokens) Verify(ctx context.Context, secret string) (Identity, error) {
	if !wellFormed(secret) {
		return Identity{}, fmt.Errorf("%w: not a toolsift API token (tsk_...)", ErrUnknownToken)
	}
	sum := sha256.Sum256([]byte(secret))
	now := t.now()
	t.mu.Lock()
	c, ok := t.cache[sum]
	forgot := t.forgot
	t.mu.Unlock()
	if !ok || !now.Before(c.until) {
		hash := hex.EncodeToString(sum[:])
		rctx, cancel := context.WithTimeout(ctx, tokenReadTimeout)
		rec, err := t.read(rctx, tokenHashKey(hash))
		cancel()
		switch {
		case errors.Is(err, store.ErrNotFound):
			c = cachedToken{}
		case err != nil:
			if id, ok := t.fromMemory(sum, now); ok {
				return id, nil
			}
			// The store failing is not the token's fault: not cached. Its
			// error may quote the key, the secret's hash: left out.
			return Identity{}, fmt.Errorf("authn: verify token %s: %s", secret[len(TokenPrefix):len(TokenPrefix)+tokenIDLen], strings.ReplaceAll(err.Error(), hash, "HASH"))
		default:
			stored, derr := hex.DecodeString(rec.Hash)
			live := derr == nil && subtle.ConstantTimeCompare(stored, sum[:]) == 1
			c = cachedToken{id: Identity{User: rec.User, Teams: rec.Teams}, live: live}
		}
		c.until = now.Add(TokenCacheTTL)
		t.mu.Lock()
		if t.forgot == forgot { // else a revocation may have come after the read: not kept
			if len(t.cache) >= maxCachedTokens {
				clear(t.cache)
			}
			t.cache[sum] = c
			if !c.live {
				delete(t.known, sum)
			} else {
				if len(t.known) >= maxCachedTokens {
					clear(t.known)
				}
				t.known[sum] = knownToken{id: c.id, read: now}
			}
		}
		t.mu.Unlock()
	}
	if !c.live {
		return Identity{}, fmt.Errorf("%w (token %s)", ErrUnknownToken, secret[len(TokenPrefix):len(TokenPrefix)+tokenIDLen])
	}
	return Identity{User: c.id.User, Teams: slices.Clone(c.id.Teams)}, nil
}

// Watch makes a revocation (or a creation) through another process take
// effect here at once, when t's store tells of changes (a store.Watcher,
// such as store/postgres): what Verify cached of a changed token is
// dropped, and once the watch listens everything it cached (a token
// revoked before then went unreported). Run it for as long as t verifies
// requests (go tokens.Watch(ctx) beside the server that Requires them):
// it returns nil when ctx ends, nil at once when the store is no Watcher
// (TokenCacheTTL is then the only bound), or the watch's error, after
// which revocations elsewhere still arrive within TokenCacheTTL.
func (t *Tokens) Watch(ctx context.Context) error {
	w, ok := t.s.(store.Watcher)
	if !ok {
		return nil
	}
	err := w.Watch(ctx, "tokens/hash/", func() {
		// Listening now: a token Verify cached before may have been
		// revoked elsewhere unreported. Read each again.
		t.forgetAll()
	}, func(key string) {
		name := strings.TrimSuffix(strings.TrimPrefix(key, "tokens/hash/"), ".json")
		if sum, err := hex.DecodeString(name); err == nil && len(sum) == 32 {
			t.forget([32]byte(sum))
		}
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("authn: watching API tokens for revocations: %w", err)
	}
	return nil
}

// fromMemory returns the Identity of the token whose secret's hash is
// sum when Verify read it live from the store within t.outage of now:
// the store cannot be read, and the token is accepted as last read. It
// is cached for TokenCacheTTL, so that the store is tried again then
// rather than at every request.
func (t *Tokens) fromMemory(sum [32]byte, now time.Time) (Identity, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.known[sum]
	if !ok || now.Sub(k.read) >= t.outage {
		return Identity{}, false
	}
	t.cache[sum] = cachedToken{id: k.id, live: true, until: now.Add(TokenCacheTTL)}
	return Identity{User: k.id.User, Teams: slices.Clone(k.id.Teams)}, true
}

// forgetAll drops everything Verify cached, and knew.
func (t *Tokens) forgetAll() {
	t.mu.Lock()
	clear(t.cache)
	clear(t.known)
	t.forgot++
	t.mu.Unlock()
}

// forget drops what Verify cached, and knew, of one secret's hash.
func (t *Tokens) forget(sum [32]byte) {
	t.mu.Lock()
	delete(t.cache, sum)
	delete(t.known, sum)
	t.forgot++
	t.mu.Unlock()
}

func (t *Tokens) read(ctx context.Context, key string) (tokenRecord, error) {
	b, err := t.s.Get(ctx, key)
	if err != nil {
		return tokenRecord{}, err
	}
	var rec tokenRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return tokenRecord{}, fmt.Errorf("token record %s: %w", key, err)
	}
	return rec, nil
}

func tokenIDKey(id string) string     { return "tokens/id/" + id + ".json" }
func tokenHashKey(hash string) string { return "tokens/hash/" + hash + ".json" }

// wellFormed reports whether s has the form of a secret Create makes.
func wellFormed(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	rest := s[len(TokenPrefix):]
	if !isTokenID(rest[:tokenIDLen]) || rest[tokenIDLen] != '_' {
		return false
	}
	for _, c := range []byte(rest[tokenIDLen+1:]) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isTokenID(s string) bool {
	if len(s) != tokenIDLen {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// checkPrincipal checks a user's or a team's name.
func checkPrincipal(what, s string) error {
	if s == "" {
		return fmt.Errorf("authn: token: the %s is empty", what)
	}
	if len(s) > 128 {
		return fmt.Errorf("authn: token: %s %.20q...: longer than 128 bytes", what, s)
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.@+", c) >= 0) {
			return fmt.Errorf("authn: token: %s %q: byte %q is not allowed (letters, digits and -_.@+)", what, s, c)
		}
	}
	return nil
}

// checkTokenName checks what a token is named for.
func checkTokenName(name string) error {
	if len(name) > 200 {
		return fmt.Errorf("authn: token: name %.20q...: longer than 200 bytes", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\uFFFD' {
			return fmt.Errorf("authn: token: name %q: control characters and invalid UTF-8 are not allowed", name)
		}
	}
	return nil
}
