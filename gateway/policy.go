package gateway

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/mcp"
	"github.com/toolsift/toolsift/tool"
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
//   - tools/call (listed, by name) and call_tool: a tool out of scope is
//     called with a scope that holds no server, so the Hub answers exactly
//     as for a tool no server has (same error, same hint), and neither
//     the quarantine nor the hint names it;
//   - resources/read, prompts/get, completion/complete, resources/subscribe
//     and unsubscribe: the Hub routes them with mcp.WithServerScope, as if
//     the servers out of scope did not exist; under a policy, the errors
//     of a resource or prompt no server in scope has are the SDK's for one
//     that is not registered, so a registered one out of scope reads the
//     same.
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
	warnings []string // src's, and the patterns that name no server

	mu     sync.Mutex
	scopes map[string]*scope // by scopeKey
}

// scope is what one identity may see: the patterns of the rules that match
// it, and the catalog's tools they let through at one generation.
type scope struct {
	allowServers, allowTools []string
	denyServers, denyTools   []string

	mu    sync.Mutex
	gen   uint64
	built bool
	tools map[string]bool // catalog tool → visible, at gen
}

// newPolicy checks src (as LoadPolicy does, for a policy made in code)
// and returns it compiled, with src's warnings and one for each pattern
// that names no server of servers.
func newPolicy(src *config.Policy, servers []string) (*policy, error) {
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
		for _, g := range slices.Concat(r.Allow, r.Deny) {
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
	return &policy{src: src, warnings: warnings, scopes: map[string]*scope{}}, nil
}

// scopeKey names an identity in the scope cache ("" for anonymous).
func scopeKey(id Identity) string {
	if id.IsZero() {
		return ""
	}
	return id.User + "\x00" + strings.Join(id.Teams, "\x00")
}

// scopeOf returns the scope of id, made once per identity.
func (pol *policy) scopeOf(id Identity) *scope {
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
	if len(pol.scopes) >= maxScopes {
		clear(pol.scopes)
	}
	pol.scopes[key] = sc
	return sc
}

// ruleMatches reports whether r applies to id: its user matches one of
// Users, or one of its teams one of Teams (a glob never matches an empty
// name: "*" is everyone signed in).
func ruleMatches(r config.PolicyRule, id Identity) bool {
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
// Safe for concurrent use (mcp.WithServerScope asks it).
func (sc *scope) server(name string) bool {
	return anyMatch(sc.allowServers, name) && !anyMatch(sc.denyServers, name)
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

// access returns what ctx's caller (IdentityFrom; anonymous without one)
// may reach, or nil without a policy.
func (p *proxy) access(ctx context.Context) *access {
	id, _ := IdentityFrom(ctx)
	return p.accessOf(id)
}

// accessOf is what id may reach, or nil without a policy.
func (p *proxy) accessOf(id Identity) *access {
	pol := p.policy.Load()
	if pol == nil {
		return nil
	}
	sc := pol.scopeOf(id)
	return &access{sc: sc, p: p, vis: sc.visible(p.ts.Index().Generation(), p.ts.Tools)}
}

// hides reports whether the tool name is out of scope (a name the
// catalog does not have is not this rule's business: it is unknown
// anyway). The proxy's own tools are in every scope.
func (a *access) hides(name string) bool {
	if a == nil || name == SearchToolName || name == CallToolName {
		return false
	}
	if a.vis[name] {
		return false
	}
	t, ok := a.p.ts.Get(name)
	return ok && !a.sc.tool(t) // (a tool newer than the generation read: by its patterns)
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
	pol, err := newPolicy(src, p.serverNames())
	if err != nil {
		return err
	}
	p.policy.Store(pol)
	p.toolsChanged()
	p.featuresChanged()
	return nil
}

// serverNames are the config's servers, as policies name them.
func (p *proxy) serverNames() []string {
	var names []string
	for _, st := range p.ts.Hub().Status() {
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
func (s *session) scoped(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		a := s.p.access(ctx)
		if a == nil {
			return next(ctx, method, req)
		}
		switch method {
		case "resources/read", "prompts/get", "completion/complete", "resources/subscribe", "resources/unsubscribe":
			// Routed by server; a tools/call is held to the tool's scope
			// (proxy.call), which a tool pattern may grant without its
			// server's.
			ctx = mcp.WithServerScope(ctx, a.sc.server)
		}
		if call, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && call.Params != nil && a.hides(call.Params.Name) {
			// What the SDK says of a tool not on the list (checkTools adds
			// the hint of a tool no server has).
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", call.Params.Name)}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, notFound(method, req, err)
		}
		switch r := res.(type) {
		case *sdk.ListToolsResult:
			r.Tools = slices.DeleteFunc(slices.Clone(r.Tools), func(t *sdk.Tool) bool { return a.hides(t.Name) })
		case *sdk.ListResourcesResult:
			of := map[string]string{}
			for _, x := range s.p.ts.Hub().Resources() {
				of[x.URI] = x.Server
			}
			r.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(x *sdk.Resource) bool {
				srv, ok := of[x.URI] // not the Hub's (any more): left out too
				return !ok || !a.sc.server(srv)
			})
		case *sdk.ListResourceTemplatesResult:
			of := map[string]string{}
			for _, x := range s.p.ts.Hub().ResourceTemplates() {
				of[x.URITemplate] = x.Server
			}
			r.ResourceTemplates = slices.DeleteFunc(slices.Clone(r.ResourceTemplates), func(x *sdk.ResourceTemplate) bool {
				if x.URITemplate == namespacedTemplate {
					return false // the gateway's own, in every scope
				}
				srv, ok := of[x.URITemplate]
				return !ok || !a.sc.server(srv)
			})
		case *sdk.ListPromptsResult:
			of := map[string]string{}
			for _, x := range s.p.ts.Hub().Prompts() {
				of[x.Name] = x.Server
			}
			r.Prompts = slices.DeleteFunc(slices.Clone(r.Prompts), func(x *sdk.Prompt) bool {
				srv, ok := of[x.Name]
				return !ok || !a.sc.server(srv)
			})
		}
		return res, nil
	}
}

// notFound turns the Hub's "no server has it" of a resource or prompt the
// session's server has registered (every server's are, whatever the
// caller's scope) into what the SDK says of one it has not: under a
// policy, the answer for a resource or prompt out of scope is the one for
// a resource or prompt that does not exist.
func notFound(method string, req sdk.Request, err error) error {
	switch r := req.(type) {
	case *sdk.ReadResourceRequest:
		if method == "resources/read" && r.Params != nil && errors.Is(err, mcp.ErrUnknownResource) {
			return sdk.ResourceNotFoundError(r.Params.URI)
		}
	case *sdk.GetPromptRequest:
		if method == "prompts/get" && r.Params != nil && errors.Is(err, mcp.ErrUnknownPrompt) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", r.Params.Name)}
		}
	}
	return err
}
