package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// A Verifier says whose a bearer credential is. Verify returns the
// Identity bearer proves; an error wrapping ErrUnknownToken when bearer is
// not a valid credential (malformed, unknown, revoked, expired): the
// request is refused with 401; any other error when it cannot be checked
// now (its store or issuer unreachable): 503, so that the client keeps a
// credential that is not at fault. Its errors must not hold bearer, which
// is never empty. Require calls Verify concurrently, on every request and
// again every TokenCacheTTL while one is in flight.
type Verifier interface {
	Verify(ctx context.Context, bearer string) (Identity, error)
}

var (
	_ Verifier = (*Tokens)(nil)
	_ Verifier = (*OIDC)(nil)
)

// Options configure Require. The zero value (or nil) gives the defaults.
type Options struct {
	// Logger gets a line per refused request (a wrong credential at Warn,
	// a missing one at Debug, one that cannot be checked now at Error) and
	// per request ended in flight, with the remote address and the
	// Verifier's error, never the credential; nil discards them.
	Logger *slog.Logger
	// Hint follows "401 unauthorized: " in a refusal's body: what to send
	// and how to get it. Default "this server needs a bearer token
	// (Authorization: Bearer ...)".
	Hint string
}

const defaultHint = "this server needs a bearer token (Authorization: Bearer ...)"

// ErrRevoked is wrapped by the cause (context.Cause) of a request's
// context that Require ended in flight because its credential is no
// longer valid (a token revoked, a JWT expired): what the request was
// doing for the caller (gateway.Gateway's upstream call) ends with it,
// and says so.
var ErrRevoked = errors.New("authn: the request's credential was revoked or expired")

// Require returns a middleware that lets a request through to next only
// with a bearer credential (Authorization: Bearer ...) that v verifies,
// the Identity v says it proves on the request's context (IdentityFrom),
// where next finds its caller. A request without
// one, or with one v refuses, is answered 401 with WWW-Authenticate:
// Bearer; one v cannot check now, 503. A request in flight (a session's
// event stream, a long call) is checked again every TokenCacheTTL and
// ended once v refuses its credential, its context canceled with a cause
// wrapping ErrRevoked: a revoked token or an expired JWT ends it, at most
// TokenCacheTTL (and one Verify) after the refusal, as it would refuse a
// new request.
func Require(v Verifier, opts *Options) func(http.Handler) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Hint == "" {
		o.Hint = defaultHint
	}
	unauthorized := "401 unauthorized: " + o.Hint
	log := o.Logger
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			scheme, bearer, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			bearer = strings.TrimSpace(bearer)
			var id Identity
			err := fmt.Errorf("%w: no bearer token (Authorization: Bearer ...)", ErrUnknownToken)
			if strings.EqualFold(scheme, "Bearer") && bearer != "" {
				id, err = v.Verify(r.Context(), bearer)
			}
			if err != nil {
				if !errors.Is(err, ErrUnknownToken) {
					// The store or the issuer failed: not the caller's
					// fault, and not a reason to make the client drop its
					// credential.
					log.Error("verifying an API token", "error", err, "remote", r.RemoteAddr)
					http.Error(w, "503 service unavailable: the credential cannot be checked now; try again", http.StatusServiceUnavailable)
					return
				}
				if bearer != "" {
					// A missing credential is routine (a client's first
					// try); a wrong or revoked one is worth a look.
					log.Warn("request refused", "error", err, "remote", r.RemoteAddr)
				} else {
					log.Debug("request refused", "error", err, "remote", r.RemoteAddr)
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
				http.Error(w, unauthorized, http.StatusUnauthorized)
				return
			}
			ctx, cancel := context.WithCancelCause(WithIdentity(r.Context(), id))
			defer cancel(nil)
			go endWhenRefused(ctx, cancel, v, bearer, log)
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// endWhenRefused checks the credential of a request in flight every
// TokenCacheTTL, and ends the request (cancel, with a cause wrapping
// ErrRevoked) once it is refused: a session's event stream (GET), open
// for hours, or a long call stops when its token is revoked or its JWT
// expires, as new requests do. It returns when ctx ends.
func endWhenRefused(ctx context.Context, cancel context.CancelCauseFunc, v Verifier, bearer string, log *slog.Logger) {
	t := time.NewTicker(TokenCacheTTL)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := v.Verify(ctx, bearer); errors.Is(err, ErrUnknownToken) {
			log.Info("request ended: its credential is no longer valid", "error", err)
			cancel(fmt.Errorf("%w: %w", ErrRevoked, err))
			return
		}
	}
}

// SharedToken returns the Verifier of one token that every caller shares:
// a bearer equal to token proves the zero
// Identity, an anonymous caller (a policy's anonymous rule), and any other
// is refused; an empty token refuses every bearer. Both sides are hashed
// before they are compared, in constant time, so the time taken says
// nothing of the token's length or content. A shared token says nothing
// of who calls: give it alone, not beside per-user credentials, which it
// would let anyone holding it past as nobody.
func SharedToken(token string) Verifier {
	return sharedToken{sum: sha256.Sum256([]byte(token)), set: token != ""}
}

type sharedToken struct {
	sum [32]byte
	set bool
}

func (s sharedToken) Verify(_ context.Context, bearer string) (Identity, error) {
	sum := sha256.Sum256([]byte(bearer))
	if subtle.ConstantTimeCompare(sum[:], s.sum[:]) != 1 || !s.set {
		return Identity{}, fmt.Errorf("%w: not the shared token", ErrUnknownToken)
	}
	return Identity{}, nil
}

// Or returns a Verifier that hands a bearer starting with TokenPrefix to
// t and any other to other: API tokens beside the JWTs of an OIDC issuer,
// for one.
func (t *Tokens) Or(other Verifier) Verifier { return either{t, other} }

type either struct {
	tokens *Tokens
	other  Verifier
}

func (e either) Verify(ctx context.Context, bearer string) (Identity, error) {
	if strings.HasPrefix(bearer, TokenPrefix) {
		return e.tokens.Verify(ctx, bearer)
	}
	return e.other.Verify(ctx, bearer)
}
