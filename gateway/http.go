package gateway

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
)

// Handler returns the streamable HTTP handler of the proxy: one session,
// with its own list, per client of MCP 2025-11-25 and before, none for a
// client of 2026-07-28 (byWire); none for any client with Stateless.
func (p *proxy) handler(o *HTTPOptions) http.Handler {
	var opts HTTPOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = defaultBodyTimeout
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
	return checkOrigin(opts.AllowedOrigins, h)
}

// statefulHandler is the go-sdk handler with sessions, behind the session
// guard.
func (p *proxy) statefulHandler(opts *HTTPOptions) http.Handler {
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
		id, _ := authn.IdentityFrom(r.Context())
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
