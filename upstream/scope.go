package upstream

import "context"

// A request's scope: the servers one caller may reach. A proxy that serves
// several users (toolsift serve with a policy) makes each user's request
// with a ctx from WithServerScope, and the Hub routes that request as if
// the servers out of scope did not exist: a tool, prompt, resource, URI
// template or subscription of theirs is unknown to it, with the same
// error as one no server has (nothing names or counts them), and a URI
// two servers claim routes to the one in scope. The Passthrough's lists
// (Resources, ResourceTemplates, Prompts) under a scope hold the scope's
// servers' only, a URI namespaced only when several of them list it: the
// URIs ReadResource under that scope reads. Hub.Tools lists every
// server's tools: each names its server, for the proxy to filter.

type scopeKey struct{}

// WithServerScope returns ctx under which Hub.Call and every method of
// the Hub's Passthrough treat the servers in refuses (by config name) as
// absent. in must be safe for concurrent use and quick: it is asked under
// the Hub's lock. A nil in changes nothing.
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
