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
// server's tools: each names its server, for the proxy to filter. A
// proxy holds calls to its caller's tools with WithToolScope: Hub.Call
// asks it where it routes the call, so that the decision is made on the
// route and the trust state of that moment.

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

// A ToolRoute is what a call of a tool routes to, as the Hub has it at
// the moment it routes the call: the server that lists the tool now and
// the tool's trust state as that listing left it.
type ToolRoute struct {
	Server string // the server's config name
	Tool   string // the qualified name called
	// Changed is what differs from the tool's trust record ("description",
	// "input schema", ...: see ChangedTool), nil when it matches it.
	// Read-only.
	Changed []string
}

type toolScopeKey struct{}

// WithToolScope returns ctx under which Hub.Call routes a call only when
// in reports true for its route; otherwise the tool is as unknown as one
// no server has (the same error). in is asked under the Hub's lock, with
// the route and trust state that the latest listing made, so that no call
// is routed on a decision older than the route: it must be quick, safe for
// concurrent use, and must not call the Hub. It holds together with
// WithServerScope (both must let the call through) and for the calls of
// every Hub the ctx reaches. A nil in changes nothing.
func WithToolScope(ctx context.Context, in func(ToolRoute) bool) context.Context {
	if in == nil {
		return ctx
	}
	return context.WithValue(ctx, toolScopeKey{}, in)
}

// toolScope returns the tool scope of ctx, nil without WithToolScope.
func toolScope(ctx context.Context) func(ToolRoute) bool {
	in, _ := ctx.Value(toolScopeKey{}).(func(ToolRoute) bool)
	return in
}
