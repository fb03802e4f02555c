package authn

import (
	"context"
	"slices"
)

// Identity is who makes a request: the user an API token or a bearer JWT
// names, and the teams the user belongs to. It is what logs, audit
// records, the policy and per-user logins speak of; the credential that
// proved it is never kept beside it.
type Identity struct {
	// User names one person or agent, unique in the gateway.
	User string
	// Teams are the groups the user belongs to, sorted.
	Teams []string
}

// IsZero reports whether id names nobody (an anonymous request: a shared
// token's, or one on loopback without a token).
func (id Identity) IsZero() bool { return id.User == "" && len(id.Teams) == 0 }

type identityKey struct{}

// WithIdentity returns ctx carrying id, its teams sorted: Require sets it
// on a request's context, and so may a middleware of your own that
// authenticates by other means; the handlers behind take the request for
// id's.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	id.Teams = slices.Clone(id.Teams)
	slices.Sort(id.Teams)
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the Identity ctx carries (WithIdentity), and
// whether it carries one.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}
