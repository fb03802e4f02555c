package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway/authn"
)

// identityExtra is the key of a request's Identity in the go-sdk's
// auth.TokenInfo.Extra: the SDK hands a request's TokenInfo to the
// handlers (RequestExtra) and binds a session to its UserID, so that is
// how an Identity set on an HTTP request reaches the MCP handlers.
const identityExtra = "toolsift.identity"

// requestExtra is the key, in the same Extra, of the HTTP request's
// context: a request ended in flight because its credential was revoked
// (authn.ErrRevoked, authn.Require) ends the MCP handler it carried
// (withRequestIdentity), which the go-sdk runs on a context of its own.
const requestExtra = "toolsift.request"

// carryIdentity passes the Identity of an HTTP request's context
// (authn.WithIdentity: set by authn.Require, or whatever authenticated it
// in front) to the MCP handlers, as the go-sdk's TokenInfo: its UserID
// binds a session to the user who opened it (another user's request for
// it gets 403), its Extra holds the Identity (requestIdentity). Requests
// without one pass as they are.
func carryIdentity(next http.Handler) http.Handler {
	// The SDK's middleware is the only way into its context key, made
	// once: its verifier turns the request's Identity into the TokenInfo.
	withInfo := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id, _ := authn.IdentityFrom(r.Context())
		return &auth.TokenInfo{UserID: "user:" + id.User, Extra: map[string]any{identityExtra: id, requestExtra: r.Context()}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := authn.IdentityFrom(r.Context())
		if !ok || id.IsZero() {
			next.ServeHTTP(w, r)
			return
		}
		// It wants a bearer header, which the identity stands for here
		// when the request had none (the header goes nowhere upstream).
		if r.Header.Get("Authorization") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer identity")
		}
		withInfo.ServeHTTP(w, r)
	})
}

// requestIdentity returns the Identity of the client request req (see
// carryIdentity); the zero Identity when it has none (stdio, or HTTP
// without authentication).
func requestIdentity(req mcp.Request) authn.Identity {
	if req == nil {
		return authn.Identity{}
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if id, ok := ex.TokenInfo.Extra[identityExtra].(authn.Identity); ok {
			return id
		}
	}
	return authn.Identity{}
}

// withRequestIdentity is the MCP servers' outermost receiving middleware:
// the handlers of a request find its Identity in their ctx
// (authn.IdentityFrom), whichever wire or session it came by; a request
// without one, on a session of one caller (stdio served with an
// Identity), is that caller's. A request whose HTTP request is ended
// because its credential was revoked (authn.ErrRevoked) is ended with
// that cause: the go-sdk runs the handlers of a session's requests on
// the session's context (a client's POST may be cut and its answer
// picked up by another), and those of a 2026-07-28 request on one of its
// own, so without this a revoked caller's upstream call would run on.
func (s *session) withRequestIdentity(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if id := requestIdentity(req); !id.IsZero() {
			ctx = authn.WithIdentity(ctx, id)
		} else if s.id != nil && !s.id.IsZero() {
			ctx = authn.WithIdentity(ctx, *s.id)
		}
		if hc := requestContext(req); hc != nil {
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(hc, func() {
				if cause := context.Cause(hc); errors.Is(cause, authn.ErrRevoked) {
					cancel(cause)
				}
			})()
		}
		return next(ctx, method, req)
	}
}

// requestContext returns the context of the HTTP request that carried
// req (see carryIdentity), nil without one.
func requestContext(req mcp.Request) context.Context {
	if req == nil {
		return nil
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if hc, ok := ex.TokenInfo.Extra[requestExtra].(context.Context); ok {
			return hc
		}
	}
	return nil
}
