package upstream

import "context"

// A request's scope: the servers one caller may reach. A proxy that serves
// several users (toolsift serve with a policy) makes each user's request
// with a ctx from WithServerScope, and the Hub routes that request as if
// the servers out of scope did not exist: a tool, prompt, resource, URI
// template or subscription of theirs is unknown to it, with the same
// error as one no server has (nothing names or counts them), and a URI
// two servers claim routes to the one in scope. What the Hub lists
// (Tools, Resources, Prompts) is the proxy's to filter: each item names
// its server; ResourcesIn and ResourceTemplatesIn list a scope's resources
// and templates namespaced among the scope's servers only, the URIs
// ReadResource under that scope reads.

type scopeKey struct{}

// WithServerScope returns ctx under which the Hub's Call, ReadResource,
// GetPrompt, Complete, Subscribe and Unsubscribe treat the servers in
// refuses (by config name) as absent. in must be safe for concurrent use
// and quick: it is asked under the Hub's lock. A nil in changes nothing.
func WithServerScope(ctx context.Context, in func(server string) bool) context.Context {
	if in == nil {
		return ctx
	}
	return context.WithValue(ctx, scopeKey{}, in)
}

// inScope returns the scope of ctx: a func reporting whether a server is
// in it (every server without WithServerScope).
func inScope(ctx context.Context) func(string) bool {
	if in, ok := ctx.Value(scopeKey{}).(func(string) bool); ok {
		return in
	}
	return everyServer
}

func everyServer(string) bool { return true }
