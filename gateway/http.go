package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpOptions configure proxy.handler (Options of Gateway.Handler).
type httpOptions struct {
	// Token, when not empty, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN). It is compared in constant time and
	// never logged.
	Token string
	// Tokens, when set, requires a live API token of the user on every
	// request instead (not both: Options refuses Token with Tokens); the
	// request has the token's Identity.
	Tokens *Tokens
	// OIDC, when set, accepts bearer JWTs of an OpenID Connect issuer
	// too (beside Tokens, or alone); not with Token.
	OIDC *OIDC
	// Stateless serves every client without sessions, whatever its
	// revision: each request is answered on its own. Without it, clients
	// of MCP 2026-07-28 are served so and the others get sessions
	// (byWire).
	Stateless bool
	// SessionTimeout closes a session idle that long; zero means never.
	SessionTimeout time.Duration
	// MaxSessions caps the open sessions; zero means DefaultMaxSessions.
	// A new session past the cap closes the session idle longest, or is
	// refused (503, naming the cap) when every session has a request in
	// flight. Each session is bound to the credential that opened it (its
	// user when the request has an Identity, else its Authorization
	// header): another gets 403.
	MaxSessions int
	// AllowedOrigins are the origins (scheme://host[:port], or "*") whose
	// requests are served besides loopback origins and the server's own
	// host; a request with another Origin header gets 403. Requests without
	// Origin (not from a browser) are served.
	AllowedOrigins []string
	// BodyTimeout is how long a request body may take to arrive; zero
	// means DefaultBodyTimeout. A body slower than that gets 408.
	BodyTimeout time.Duration
}

// Handler returns the streamable HTTP handler of the proxy: one session,
// with its own list, per client of MCP 2025-11-25 and before, none for a
// client of 2026-07-28 (byWire); none for any client with Stateless.
func (p *proxy) handler(o *httpOptions) http.Handler {
	var opts httpOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	// Stateless: every request on its own (MCP 2026-07-28, and earlier
	// revisions without sessions), one shared server with a fixed list.
	srv := p.newStatelessServer()
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true,
		Logger:    p.sdkLog,
	})
	if !opts.Stateless {
		// Both wires (wire.go): sessions for the clients of 2025-11-25
		// and before, none for those of 2026-07-28.
		h = byWire(h, p.statefulHandler(&opts))
	}
	h = carryIdentity(bodyDeadline(opts.BodyTimeout, h))
	switch {
	case opts.Tokens != nil || opts.OIDC != nil:
		h = requireToken(opts.Tokens, opts.OIDC, p.log, h)
	case opts.Token != "":
		h = requireBearer(opts.Token, h)
	}
	return checkOrigin(opts.AllowedOrigins, h)
}

// statefulHandler is the go-sdk handler with sessions, behind the session
// guard.
func (p *proxy) statefulHandler(opts *httpOptions) http.Handler {
	// The SDK asks for a server on every request (once to learn the
	// protocol versions it speaks, once more when the request opens a
	// session), so one server is made per request that has no session
	// yet, and a shared one answers the rest.
	shared := p.newServer()
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Header.Get("Mcp-Session-Id") != "" || r.Method != http.MethodPost {
			return shared
		}
		// The session is its opener's (the SDK refuses it to another
		// user): its list holds the pinned tools in their scope.
		id, _ := IdentityFrom(r.Context())
		if slot, ok := r.Context().Value(serverSlotKey{}).(*serverSlot); ok {
			slot.once.Do(func() { slot.srv = p.newSessionServer(id) })
			return slot.srv
		}
		return p.newSessionServer(id)
	}, &mcp.StreamableHTTPOptions{
		Logger:         p.sdkLog,
		SessionTimeout: opts.SessionTimeout,
		// Events kept for a client to resume a stream after a cut
		// (Last-Event-ID): SSE polling, a balancer's idle timeout.
		// One store for every session, at most the SDK's 10 MiB.
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	return newSessionGuard(h, opts.MaxSessions, p.log)
}

// withServerSlot gives r the slot where the server made for it is kept.
func withServerSlot(r *http.Request, slot *serverSlot) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), serverSlotKey{}, slot))
}

type serverSlotKey struct{}

// serverSlot holds the server made for one HTTP request.
type serverSlot struct {
	once sync.Once
	srv  *mcp.Server
}

// requireBearer refuses requests without the bearer token with 401. Both
// sides are hashed first, so the comparison takes the same time whatever
// the token's length and content.
func requireBearer(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		scheme, got, _ := strings.Cut(auth, " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		ok := subtle.ConstantTimeCompare(sum[:], want[:]) == 1
		if !strings.EqualFold(scheme, "Bearer") || !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
			http.Error(w, "401 unauthorized: this toolsift serve needs its bearer token (Authorization: Bearer ...)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireToken refuses requests without a live API token of tokens, or a
// valid JWT of oidc (either may be nil), with 401, and gives the others
// the token's Identity (carryIdentity passes it on to the MCP handlers).
// A refusal is logged with the API token's id when the header holds
// something of a token's form, never the secret.
func requireToken(tokens *Tokens, oidc *OIDC, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		secret = strings.TrimSpace(secret)
		var id Identity
		err := fmt.Errorf("%w: no bearer token (Authorization: Bearer ...)", ErrUnknownToken)
		var verify func(context.Context, string) (Identity, error)
		switch {
		case !strings.EqualFold(scheme, "Bearer") || secret == "":
		case tokens != nil && (strings.HasPrefix(secret, TokenPrefix) || oidc == nil):
			verify = tokens.Verify
		case oidc != nil:
			verify = oidc.Verify
		}
		if verify != nil {
			id, err = verify(r.Context(), secret)
		}
		if err != nil {
			status, msg := http.StatusUnauthorized, "401 unauthorized: this toolsift serve needs your API token (Authorization: Bearer tsk_...; toolsift token create makes one)"
			if !errors.Is(err, ErrUnknownToken) {
				// The store failed: not the caller's fault, and not a
				// reason to make the client drop its token.
				status, msg = http.StatusServiceUnavailable, "503 service unavailable: API tokens cannot be checked now; try again"
				log.Error("verifying an API token", "error", err, "remote", r.RemoteAddr)
			} else if secret != "" {
				// A missing token is routine (a client's first try); a
				// wrong or revoked one is worth a look.
				log.Warn("request refused", "error", err, "remote", r.RemoteAddr)
			} else {
				log.Debug("request refused", "error", err, "remote", r.RemoteAddr)
			}
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
			}
			http.Error(w, msg, status)
			return
		}
		ctx, cancel := context.WithCancel(WithIdentity(r.Context(), id))
		defer cancel()
		go endWhenRefused(ctx, cancel, verify, secret, log)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// endWhenRefused checks the credential of a request in flight every
// TokenCacheTTL, and ends the request (cancel) once it is refused: a
// session's event stream (GET), open for hours, or a long call stops
// when its token is revoked or its JWT expires, as new requests do. It
// returns when ctx ends.
func endWhenRefused(ctx context.Context, cancel func(), verify func(context.Context, string) (Identity, error), secret string, log *slog.Logger) {
	t := time.NewTicker(TokenCacheTTL)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := verify(ctx, secret); errors.Is(err, ErrUnknownToken) {
			log.Info("request ended: its credential is no longer valid", "error", err)
			cancel()
			return
		}
	}
}
