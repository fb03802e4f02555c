package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
	"github.com/yosida95/uritemplate/v3"
)

// Scoping (Options.Policy, a config.Policy): each caller sees and calls
// the servers and tools its Identity is allowed, on every route, and the
// rest do not exist for it. Where it holds:
//
//   - search_tools: a tool out of scope is skipped by the search
//     (think.Thinker.Find's skip, with the quarantine), so it is never in
//     an answer, its omitted names or its counts;
//   - tools/list, resources/list, resources/templates/list, prompts/list:
//     a session of one caller lists only its scope's pinned tools,
//     resources, templates and prompts (session.pins, syncFeatures), and
//     every answer is filtered per request too (scoped, a receiving
//     middleware: the stateless wire's server is shared by every caller);
//     a URI or template several servers list is namespaced among the
//     scope's servers only (scoped Passthrough lists: inScopeList gives the shared
//     server's namespaced form of a URI one server in scope lists as the
//     plain URI, and readPlain reads it through the Hub in scope);
//   - tools/list_changed, resources/list_changed and prompts/list_changed
//     on the shared server's listen streams: only to a stream whose
//     caller's visible list of that kind changed (announce.go), and a
//     new policy announced to those streams whose lists it changed
//     (setPolicy, announcePolicy);
//   - tools/call (listed, by name) and call_tool: the Hub decides where it
//     routes the call (gate, upstream.WithToolScope), on the server that
//     lists the tool at that moment, never on what the index holds; a
//     per-user server's tool by the name's server, and again in the
//     caller's own session's Hub. Deny by default: a tool out of scope, or
//     a name no server lists, is answered exactly as a tool no server has
//     (same error, same hint), and neither the quarantine nor the hint
//     names it;
//   - resources/read, prompts/get, completion/complete, resources/subscribe
//     and unsubscribe, and the resourceSubscriptions of a 2026-07-28
//     subscriptions/listen stream: the Hub routes them with
//     upstream.WithServerScope, as if the servers out of scope did not
//     exist; under a policy, the errors of a resource or prompt no server
//     in scope has are the SDK's for one that is not registered, so a
//     registered one out of scope reads the same;
//   - notifications/resources/updated: only from a server in the scope of
//     the session's or listen stream's caller, as the policy is when the
//     update comes (subscribe.go).
//
// What a caller may see is worked out once per identity (its rules'
// patterns merged, scopeOf) and, for the catalog's tools, once per catalog
// generation (scope.tools).

// maxScopes bounds the identities whose scope is kept; past it they are
// worked out anew.
const maxScopes = 4096

// policy is a config.Policy as the proxy enforces it.
type policy struct {
	src      *config.Policy
	warnings []string   // src's, and the patterns that name no server
	limits   []*limiter // src's rate limits (ratelimit.go)

	mu     sync.Mutex
	scopes map[string]*scope // by scopeKey
}

// scope is what one identity may see: the patterns of the rules that match
// it, and the catalog's tools they let through at one generation.
type scope struct {
	allowServers, allowTools []string
	denyServers, denyTools   []string
	limits                   []*limiter // of the rules that match

	mu    sync.Mutex
	gen   uint64
	built bool
	tools map[string]bool // catalog tool → visible, at gen
}

// newPolicy checks src (as LoadPolicy does, for a policy made in code)
// and returns it compiled, with src's warnings and one for each pattern
// that names no server of servers.
func newPolicy(src *config.Policy, servers []string, old *policy) (*policy, error) {
	if src == nil {
		return nil, nil
	}
	warnings := slices.Clone(src.Warnings)
	check := func(r config.PolicyRule, what string) error {
		at := r.At
		if at == "" {
			at = "policy"
		}
		for _, g := range slices.Concat(r.Users, r.Teams, r.Allow, r.Deny) {
			if strings.TrimSpace(g) == "" {
				return fmt.Errorf("%w: %s: %s: an empty glob", ErrOptions, at, what)
			}
			if _, err := path.Match(g, ""); err != nil {
				return fmt.Errorf("%w: %s: %s: glob %q: %v", ErrOptions, at, what, g, err)
			}
		}
		patterns := slices.Concat(r.Allow, r.Deny)
		for _, l := range r.Limits {
			patterns = append(patterns, l.Tools...)
		}
		for _, g := range patterns {
			srv, _, _ := strings.Cut(g, "__")
			if !slices.ContainsFunc(servers, func(s string) bool { return glob(srv, s) }) {
				warnings = append(warnings, fmt.Sprintf("%s: %s: pattern %q names no server of the config", at, what, g))
			}
		}
		return nil
	}
	for i, r := range src.Rules {
		if len(r.Users) == 0 && len(r.Teams) == 0 {
			return nil, fmt.Errorf("%w: policy rule %d names no users and no teams: it would match nobody", ErrOptions, i+1)
		}
		if err := check(r, fmt.Sprintf("rule %d", i+1)); err != nil {
			return nil, err
		}
	}
	if a := src.Anonymous; a != nil {
		if len(a.Users) > 0 || len(a.Teams) > 0 {
			return nil, fmt.Errorf("%w: the policy's anonymous rule names users or teams: it is for callers without an identity", ErrOptions)
		}
		if err := check(*a, "anonymous"); err != nil {
			return nil, err
		}
	}
	limits, err := newLimiters(src, old)
	if err != nil {
		return nil, err
	}
	return &policy{src: src, warnings: warnings, limits: limits, scopes: map[string]*scope{}}, nil
}

// scopeKey names an identity in the scope cache ("" for anonymous).
func scopeKey(id authn.Identity) string {
	if id.IsZero() {
		return ""
	}
	return id.User + "\x00" + strings.Join(id.Teams, "\x00")
}

// scopeOf returns the scope of id, made once per identity.
func (pol *policy) scopeOf(id authn.Identity) *scope {
	key := scopeKey(id)
	pol.mu.Lock()
	defer pol.mu.Unlock()
	if sc, ok := pol.scopes[key]; ok {
		return sc
	}
	sc := &scope{}
	add := func(r config.PolicyRule) {
		for _, g := range r.Allow {
			if strings.Contains(g, "__") {
				sc.allowTools = append(sc.allowTools, g)
			} else {
				sc.allowServers = append(sc.allowServers, g)
			}
		}
		for _, g := range r.Deny {
			if strings.Contains(g, "__") {
				sc.denyTools = append(sc.denyTools, g)
			} else {
				sc.denyServers = append(sc.denyServers, g)
			}
		}
	}
	if id.IsZero() {
		if pol.src.Anonymous != nil {
			add(*pol.src.Anonymous)
		}
	} else {
		for _, r := range pol.src.Rules {
			if ruleMatches(r, id) {
				add(r)
			}
		}
	}
	sc.limits = pol.limitsOf(id)
	if len(pol.scopes) >= maxScopes {
		clear(pol.scopes)
	}
	pol.scopes[key] = sc
	return sc
}

// ruleMatches reports whether r applies to id: its user matches one of
// Users, or one of its teams one of Teams (a glob never matches an empty
// name: "*" is everyone signed in).
func ruleMatches(r config.PolicyRule, id authn.Identity) bool {
	if id.User != "" && anyMatch(r.Users, id.User) {
		return true
	}
	return slices.ContainsFunc(id.Teams, func(t string) bool { return t != "" && anyMatch(r.Teams, t) })
}

// anyMatch reports whether one of globs matches s.
func anyMatch(globs []string, s string) bool {
	for _, g := range globs {
		if glob(g, s) {
			return true
		}
	}
	return false
}

// glob is path.Match but for "/", which "*" and "?" match too: a team or
// user name may hold one ("org/team"), and "*" is everyone.
func glob(pattern, name string) bool {
	const sep = "\x1f" // no name or pattern of a policy holds it
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", sep), strings.ReplaceAll(name, "/", sep))
	return ok
}

// server reports whether the server's resources, templates, prompts and
// completions are in scope: a server pattern allows it and none denies it.
// Safe for concurrent use (upstream.WithServerScope asks it).
func (sc *scope) server(name string) bool {
	return anyMatch(sc.allowServers, name) && !anyMatch(sc.denyServers, name)
}

// reaches reports whether a tool of server may be in scope: a server
// pattern allows it, or a tool pattern whose server part matches it
// does, and no server pattern denies it.
func (sc *scope) reaches(server string) bool {
	if anyMatch(sc.denyServers, server) {
		return false
	}
	if anyMatch(sc.allowServers, server) {
		return true
	}
	return slices.ContainsFunc(sc.allowTools, func(g string) bool {
		srv, _, _ := strings.Cut(g, "__")
		return glob(srv, server)
	})
}

// reaches reports whether id may reach a tool of server (PerUser's
// inScope): always without a policy.
func (p *proxy) reaches(id authn.Identity, server string) bool {
	a := p.accessOf(id)
	return a == nil || a.sc.reaches(server)
}

// tool reports whether t is in scope: allowed by a server or tool pattern,
// denied by none.
func (sc *scope) tool(t tool.Tool) bool {
	allowed := anyMatch(sc.allowServers, t.Server) || anyMatch(sc.allowTools, t.Name)
	return allowed && !anyMatch(sc.denyServers, t.Server) && !anyMatch(sc.denyTools, t.Name)
}

// visible returns the catalog's tools in scope at generation gen, by name,
// worked out once per generation; get looks up a tool of the catalog.
func (sc *scope) visible(gen uint64, all func() []tool.Tool) map[string]bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.built && sc.gen == gen {
		return sc.tools
	}
	tools := all()
	m := make(map[string]bool, len(tools))
	for _, t := range tools {
		if sc.tool(t) {
			m[t.Name] = true
		}
	}
	sc.tools, sc.gen, sc.built = m, gen, true
	return m
}

// access is what a request's caller may reach; nil means everything (no
// policy).
type access struct {
	sc  *scope
	p   *proxy
	vis map[string]bool // the catalog's tools in scope, at the generation read
}

// access returns what ctx's caller (authn.IdentityFrom; anonymous
// without one) may reach, or nil without a policy.
func (p *proxy) access(ctx context.Context) *access {
	id, _ := authn.IdentityFrom(ctx)
	return p.accessOf(id)
}

// accessOf is what id may reach, or nil without a policy.
func (p *proxy) accessOf(id authn.Identity) *access {
	pol := p.policy.Load()
	if pol == nil {
		return nil
	}
	sc := pol.scopeOf(id)
	return &access{sc: sc, p: p, vis: sc.visible(p.ts.Generation(), p.ts.Tools)}
}

// gate is what the Hub asks of one call where it routes it
// (upstream.WithToolScope), at the moment it routes it: the decision is
// made on the route (the server that lists the tool now, and its trust
// state), never on what the index holds. It records why it refused.
type gate struct {
	a       *access // nil: no policy
	hidden  atomic.Bool
	changed atomic.Pointer[changed]
}

// check lets the call of r through when its tool is in scope and
// unchanged since first seen (or accepted); else it records why not.
func (g *gate) check(r upstream.ToolRoute) bool {
	if !g.allows(r.Server, r.Tool) {
		g.hidden.Store(true)
		return false
	}
	if r.Changed != nil {
		g.changed.Store(&changed{server: r.Server, what: r.Changed})
		return false
	}
	return true
}

// allows reports whether the tool name of server is in the caller's
// scope: always without a policy.
func (g *gate) allows(server, name string) bool {
	return g.a == nil || g.a.sc.tool(tool.Tool{Name: name, Server: server})
}

// hides reports whether the tool name is out of scope for a list or an
// answer: deny by default, a name the catalog does not have is hidden
// (but a per-user server's tool, placed by its name). The proxy's own
// tools are in every scope. A call is decided where the Hub routes it
// (gate), whatever the catalog holds.
func (a *access) hides(name string) bool {
	if a == nil || name == think.SearchToolName || name == CallToolName {
		return false
	}
	if a.vis[name] {
		return false
	}
	t, ok := a.p.ts.Get(name)
	if !ok {
		if srv := a.p.perUser.serverOf(name); srv != "" {
			// A per-user server's tool the catalog does not list (nobody
			// logged in yet, or another user's own): the call would go to
			// the caller's session, so by its patterns, as the name says.
			return !a.sc.tool(tool.Tool{Name: name, Server: srv})
		}
	}
	return !ok || !a.sc.tool(t) // (a tool newer than the generation read: by its patterns)
}

// resources reports whether the resources (templates, prompts,
// completions, subscriptions) of server are in scope; nil a, every
// server's.
func (a *access) resources(server string) bool {
	return a == nil || a.sc.server(server)
}

// get is the Toolset's Get for the caller: a tool out of scope is as
// absent.
func (p *proxy) get(ctx context.Context, name string) (tool.Tool, bool) {
	if p.access(ctx).hides(name) {
		return tool.Tool{}, false
	}
	return p.ts.Get(name)
}

// setPolicy enforces src (nil: none) from the next request on, and brings
// every session's list in line with it (toolsChanged: what left a
// caller's scope leaves its list and is forgotten, the pinned tools that
// entered it join). An invalid src is an error, and the policy in force
// stays.
func (p *proxy) setPolicy(src *config.Policy) error {
	pol, err := newPolicy(src, p.serverNames(), p.policy.Load())
	if err != nil {
		return err
	}
	old := p.policy.Swap(pol)
	p.toolsChanged()
	p.featuresChanged()
	if old != nil || pol != nil {
		p.announcePolicy() // announce.go: the shared server's registrations did not change
	}
	return nil
}

// serverNames are the config's servers, as policies name them.
func (p *proxy) serverNames() []string {
	var names []string
	for _, st := range p.hub.Status() {
		names = append(names, st.Name)
	}
	return names
}

// policyWarnings are the warnings of the policy in force.
func (p *proxy) policyWarnings() []string {
	if pol := p.policy.Load(); pol != nil {
		return slices.Clone(pol.warnings)
	}
	return nil
}

// noServer is a scope that holds no server: a call under it is answered
// as a call of a tool no server has.
func noServer(string) bool { return false }

// scoped is the receiving middleware that holds a request to its caller's
// scope (see the top of this file): it runs inside checkTools, whose
// quarantine refusal, call by name and unknown-tool hint ask the same
// scope (proxy.get).
func (s *session) scoped(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		a := s.p.access(ctx)
		if a == nil {
			return next(ctx, method, req)
		}
		switch method {
		case "resources/read", "prompts/get", "completion/complete", "resources/subscribe", "resources/unsubscribe", "subscriptions/listen":
			// Routed by server (a listen stream's resourceSubscriptions
			// go through the subscribe handler with its ctx); a
			// tools/call is held to the tool's scope (proxy.call), which
			// a tool pattern may grant without its server's.
			ctx = upstream.WithServerScope(ctx, a.sc.server)
		}
		if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && call.Params != nil && a.hides(call.Params.Name) {
			// What the SDK says of a tool not on the list (checkTools adds
			// the hint of a tool no server has).
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", call.Params.Name)}
		}
		handle := next
		if rr, ok := req.(*mcp.ReadResourceRequest); ok && method == "resources/read" && rr.Params != nil && s.readPlain(a, rr.Params.URI) {
			// Not registered under this URI on the shared server (only
			// its namespaced forms are): the Hub routes it in scope.
			handle = func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
				return s.readResource(ctx, rr)
			}
		}
		res, err := handle(ctx, method, req)
		if err != nil {
			return res, notFound(method, req, err)
		}
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			r.Tools = slices.DeleteFunc(slices.Clone(r.Tools), func(t *mcp.Tool) bool { return a.hides(t.Name) })
		case *mcp.ListResourcesResult:
			of, mine := s.p.resourceServers(a)
			r.Resources = inScopeList(r.Resources, of, mine, func(x *mcp.Resource) *string { return &x.URI })
		case *mcp.ListResourceTemplatesResult:
			of, mine := s.p.templateServers(a)
			r.ResourceTemplates = inScopeList(r.ResourceTemplates, of, mine, func(x *mcp.ResourceTemplate) *string { return &x.URITemplate })
		case *mcp.ListPromptsResult:
			of := s.p.promptServers()
			r.Prompts = slices.DeleteFunc(slices.Clone(r.Prompts), func(x *mcp.Prompt) bool { return !a.prompt(of, x.Name) })
		}
		return res, nil
	}
}

// resourceServers are inScopeList's of and mine for resources: the URIs
// the Hub lists to every caller and those it lists to a's scope, each to
// its server. scoped holds resources/list answers to them, and the prints
// of the shared server's listeners (announce.go) the same way.
func (p *proxy) resourceServers(a *access) (of, mine map[string]string) {
	pt := p.hub.Passthrough()
	of, mine = map[string]string{}, map[string]string{}
	for _, x := range pt.Resources(context.Background()) {
		of[x.URI] = x.Server
	}
	for _, x := range pt.Resources(upstream.WithServerScope(context.Background(), a.sc.server)) {
		mine[x.URI] = x.Server
	}
	return of, mine
}

// templateServers are inScopeList's of and mine for resource templates,
// as resourceServers; the gateway's own template is in every scope.
func (p *proxy) templateServers(a *access) (of, mine map[string]string) {
	pt := p.hub.Passthrough()
	of, mine = map[string]string{namespacedTemplate: ""}, map[string]string{namespacedTemplate: ""}
	for _, x := range pt.ResourceTemplates(context.Background()) {
		of[x.URITemplate] = x.Server
	}
	for _, x := range pt.ResourceTemplates(upstream.WithServerScope(context.Background(), a.sc.server)) {
		mine[x.URITemplate] = x.Server
	}
	return of, mine
}

// promptServers maps the Hub's prompts, by qualified name, to their
// servers, for access.prompt.
func (p *proxy) promptServers() map[string]string {
	of := map[string]string{}
	for _, x := range p.hub.Passthrough().Prompts(context.Background()) {
		of[x.Name] = x.Server
	}
	return of
}

// prompt reports whether the prompt name is in scope: its server (of,
// promptServers) is; a prompt the Hub no longer has is not.
func (a *access) prompt(of map[string]string, name string) bool {
	srv, ok := of[name]
	return ok && a.sc.server(srv)
}

// inScopeList holds a listing of resources or templates (uri picks the
// URI field) to a scope: of maps what the Hub lists to every caller (URIs
// that several servers list namespaced) to its server, mine what it lists
// to the scope (namespaced over the scope's servers only: scoped Passthrough lists)
// to its server. An item of mine stays; the namespaced URI of a server in
// scope whose plain URI is mine (a session's server shared by every
// caller registers the Hub's namespacing of every server) is given as
// that plain URI, so that a caller does not learn that a server out of
// its scope lists the same URI; the rest, out of scope or not the Hub's
// any more, are left out. The items are copied, not changed: the server
// holds them.
func inScopeList[T any](items []*T, of, mine map[string]string, uri func(*T) *string) []*T {
	out := make([]*T, 0, len(items))
	for _, x := range items {
		u := *uri(x)
		if _, ok := mine[u]; ok {
			out = append(out, x)
			continue
		}
		srv, ok := of[u]
		if !ok {
			continue
		}
		plain, ok := strings.CutPrefix(u, namespacePrefix(srv))
		if !ok {
			continue
		}
		if in, ok := mine[plain]; ok && in == srv {
			c := *x
			*uri(&c) = plain
			out = append(out, &c)
		}
	}
	return out
}

// namespacePrefix starts the namespaced URIs of server (mcp's
// resources.go).
func namespacePrefix(server string) string {
	return "toolsift:" + url.PathEscape(server) + "/"
}

// readPlain reports whether uri, asked by a caller of scope a, is one the
// caller was given plain (inScopeList) where the server shared by every
// caller registers only namespaced forms: a resource one server in scope
// lists that another out of scope lists too, or a URI that such a
// template (one server in scope has it, one out of scope too) matches.
// The Hub, under the scope, reads it from exactly that server.
func (s *session) readPlain(a *access, uri string) bool {
	if strings.HasPrefix(uri, "toolsift:") {
		return false // the gateway's template serves it
	}
	pt := s.p.hub.Passthrough()
	scoped := upstream.WithServerScope(context.Background(), a.sc.server)
	plain := func(u string, all []string) bool { return !slices.Contains(all, u) }
	var all []string
	for _, x := range pt.Resources(context.Background()) {
		all = append(all, x.URI)
	}
	for _, x := range pt.Resources(scoped) {
		if x.URI == uri && !s.p.perUser.has(x.Server) && plain(uri, all) {
			return true
		}
	}
	all = all[:0]
	for _, x := range pt.ResourceTemplates(context.Background()) {
		all = append(all, x.URITemplate)
	}
	for _, x := range pt.ResourceTemplates(scoped) {
		if s.p.perUser.has(x.Server) || strings.HasPrefix(x.URITemplate, "toolsift:") || !plain(x.URITemplate, all) {
			continue
		}
		if t, err := uritemplate.New(x.URITemplate); err == nil && t.Match(uri) != nil {
			return true
		}
	}
	return false
}

// notFound turns the Hub's "no server has it" of a resource or prompt the
// session's server has registered (every server's are, whatever the
// caller's scope) into what the SDK says of one it has not: under a
// policy, the answer for a resource or prompt out of scope is the one for
// a resource or prompt that does not exist.
func notFound(method string, req mcp.Request, err error) error {
	switch r := req.(type) {
	case *mcp.ReadResourceRequest:
		if method == "resources/read" && r.Params != nil && errors.Is(err, upstream.ErrUnknownResource) {
			return mcp.ResourceNotFoundError(r.Params.URI)
		}
	case *mcp.GetPromptRequest:
		if method == "prompts/get" && r.Params != nil && errors.Is(err, upstream.ErrUnknownPrompt) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
		}
	}
	return err
}
