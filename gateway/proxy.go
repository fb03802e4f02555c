package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/think"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
	"go.opentelemetry.io/otel/trace"
)

// CallToolName is the name of the proxy's own tool that calls a tool
// search_tools found; the other, search_tools, is think.SearchToolName.
const CallToolName = "call_tool"

// DefaultMaxTools is the default cap on one session's list: Cursor warns
// above 40 tools (and drops tools past its limit), VS Code refuses more than
// 128 per request, OpenAI's API 128.
const DefaultMaxTools = 40

// ErrOptions reports invalid Options.
var ErrOptions = errors.New("gateway: invalid options")

// validName is the rule every listed name must satisfy (Claude Desktop
// rejects others, and OpenAI's function names follow it).
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// proxyOptions configure a proxy: Options' parts that are the proxy's.
// The zero value (or nil) gives the defaults, as in Options.
type proxyOptions struct {
	// Search, Limits.MaxResultBytes, Server, Telemetry, Audit and Policy
	// are as in Options (Limits.ClientRequestsPerMinute is the Hub's,
	// not the proxy's).
	Search    SearchOptions
	Limits    Limits
	Server    ServerInfo
	Telemetry Telemetry
	Audit     *audit.Log
	Policy    *config.Policy
	// PinnedServers lists servers whose every tool is listed from the start
	// ("alwaysLoad": true in the config file); PinnedTools lists tools by
	// name (as listed: "server__tool") or path.Match glob. A pin that
	// matches nothing is a warning naming it (see Warnings).
	PinnedServers, PinnedTools []string
	// Static keeps every session's list fixed (the proxy's own tools and the
	// pinned ones): found tools are called through call_tool. For stateless
	// HTTP, where there is no session to keep a list for.
	Static bool
}

// toolset is what the proxy needs of the Toolset it serves; *toolsift.Toolset
// is one. Its methods are called concurrently, from the sessions' requests
// and from the Hub's hooks.
type toolset interface {
	// Tools returns the catalog, sorted by name; Get one of its tools.
	Tools() []tool.Tool
	Get(name string) (tool.Tool, bool)
	// Generation moves whenever the catalog changes: what is made from
	// Tools is kept until it does.
	Generation() uint64
	// Pinned names the tools pinned by the Toolset's own rule (its pins,
	// the config's alwaysLoad and alwaysLoadTools), sorted; it grows as
	// servers join.
	Pinned() []string
	// Find answers search_tools: the best k tools for query but those skip
	// names, fitted into tokens (think.Thinker.Find); an error wrapping
	// retrieval.ErrSearch for a bad query or k.
	Find(ctx context.Context, query string, k, tokens int, skip func(name string) bool) (think.SearchAnswer, []tool.Tool, error)
	// Call calls a tool of the catalog (tool.ErrUnknown, tool.ErrUnavailable
	// and tool.ErrInvalidArguments as upstream.Hub.Call).
	Call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error)
}

// A proxy serves a toolset as MCP servers, and passes on what is the Hub's
// (resources, prompts, completions, subscriptions, trust, freshness). It is
// safe for concurrent use.
type proxy struct {
	ts       toolset
	hub      *upstream.Hub // the one the Toolset's tools come from
	opts     proxyOptions
	log      *slog.Logger
	sdkLog   *slog.Logger                // the SDK's: warnings and errors only
	pinned   atomic.Pointer[[]tool.Tool] // sorted by name; grows (repin)
	repinMu  sync.Mutex                  // one repin at a time
	warnings []string

	policy   atomic.Pointer[policy] // nil: every caller sees everything (policy.go)
	saidMu   sync.Mutex
	said     map[string]uint64 // server → times it said its tools changed (announce.go)
	results  *byteBudget       // upstream result bytes in flight
	listings listings          // the tools as listed, made once per definition
	answers  answers           // search_tools answers' found tools as JSON (answer.go)
	quar     quarantined       // the changed tools as last read (quarantine.go)
	// trustEpoch moves at each toolsChanged: the quarantine is read anew.
	trustEpoch atomic.Uint64
	mu         sync.Mutex
	sessions   map[*session]time.Time // the servers made, since when (zero: kept, keep)
	grace      time.Duration          // sessionGrace, but in tests; guarded by mu
	held       heldCalls              // calls of 2026-07-28 clients waiting for their answers (held.go)
	memo       searchMemo             // each caller's latest searches, to learn from its calls (learn.go)

	// perUser reaches the per-user servers; nil when there are none. Set
	// once, before the proxy serves.
	perUser *perUser
	limits  sharedLimits // the store's rate-limit buckets (ratelimit.go); set once, before the proxy serves
	metrics *Metrics     // nil: none (Options.Telemetry.Metrics)
	tracer  trace.Tracer // nil: no spans (Options.Telemetry.Tracer)
}

// newProxy returns a proxy over ts, whose tools come from hub. It fails on
// invalid proxyOptions; pins that match nothing are warnings (Warnings),
// not errors.
func newProxy(ts toolset, hub *upstream.Hub, opts *proxyOptions) (*proxy, error) {
	switch {
	case ts == nil:
		return nil, fmt.Errorf("%w: nil Toolset", ErrOptions)
	case hub == nil:
		return nil, fmt.Errorf("%w: nil Hub: the proxy passes on the Hub's resources, prompts and trust", ErrOptions)
	}
	var o proxyOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case o.Search.MaxTools < 0:
		return nil, fmt.Errorf("%w: Search.MaxTools = %d, want > 0", ErrOptions, o.Search.MaxTools)
	case o.Search.MaxTools == 0:
		o.Search.MaxTools = DefaultMaxTools
	}
	switch {
	case o.Search.LearnScope < LearnByTeam || o.Search.LearnScope > LearnGlobal:
		return nil, fmt.Errorf("%w: Search.LearnScope = %d, want LearnByTeam, LearnByUser or LearnGlobal", ErrOptions, o.Search.LearnScope)
	case o.Search.Budget < 0:
		return nil, fmt.Errorf("%w: Search.Budget = %d, want > 0", ErrOptions, o.Search.Budget)
	case o.Search.Budget == 0:
		o.Search.Budget = think.DefaultBudget
	}
	for _, p := range o.PinnedTools {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("%w: pinned tool %q: %w", ErrOptions, p, err)
		}
	}
	switch {
	case o.Limits.MaxResultBytes < 0:
		return nil, fmt.Errorf("%w: Limits.MaxResultBytes = %d, want > 0", ErrOptions, o.Limits.MaxResultBytes)
	case o.Limits.MaxResultBytes == 0:
		o.Limits.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.Server.Name == "" {
		o.Server.Name = "toolsift"
	}
	if o.Server.Title == "" {
		o.Server.Title = "toolsift"
	}
	if o.Server.Version == "" {
		o.Server.Version = "devel"
	}
	if o.Telemetry.Logger == nil {
		o.Telemetry.Logger = slog.New(slog.DiscardHandler)
	}
	p := &proxy{ts: ts, hub: hub, opts: o, log: o.Telemetry.Logger, sdkLog: slog.New(warnOnly{o.Telemetry.Logger.Handler()}), sessions: map[*session]time.Time{}, grace: sessionGrace,
		results: newByteBudget(o.Limits.MaxResultBytes)}
	pol, err := newPolicy(o.Policy, p.serverNames(), nil)
	if err != nil {
		return nil, err
	}
	p.policy.Store(pol)
	if o.Telemetry.Tracer != nil {
		p.tracer = o.Telemetry.Tracer.Tracer(tracerName)
	}
	if o.Telemetry.Metrics != nil {
		if err := o.Telemetry.Metrics.attach(p); err != nil {
			return nil, err
		}
		p.metrics = o.Telemetry.Metrics
	}
	p.pin()
	return p, nil
}

// pin resolves the pinned servers and tools against the catalog, by the
// library's one rule (toolsift.Pins).
func (p *proxy) pin() {
	names, warnings := toolsift.Pins{Servers: p.opts.PinnedServers, Tools: p.opts.PinnedTools}.Resolve(p.ts.Tools())
	p.warnings = append(p.warnings, warnings...)
	var pinned []tool.Tool
	for _, n := range names {
		if t, ok := p.ts.Get(n); ok {
			pinned = append(pinned, t)
		}
	}
	slices.SortFunc(pinned, func(a, b tool.Tool) int { return cmp.Compare(a.Name, b.Name) })
	p.pinned.Store(&pinned)
	if fixed := 2 + len(pinned); fixed > p.opts.Search.MaxTools {
		p.warnings = append(p.warnings, fmt.Sprintf("%d pinned tools and search_tools and call_tool make %d, more than the cap of %d tools: no room for found tools", len(pinned), fixed, p.opts.Search.MaxTools))
	}
}

// pins returns the pinned tools, sorted by name.
func (p *proxy) pins() []tool.Tool { return *p.pinned.Load() }

// repin adds the tools the Toolset pins since the proxy was made (its
// Pinned grows as servers join: upstream.HubOptions.Background) and
// those of PinnedServers and PinnedTools that joined the catalog. Called
// by toolsChanged.
func (p *proxy) repin() {
	p.repinMu.Lock()
	defer p.repinMu.Unlock()
	names, _ := toolsift.Pins{Servers: p.opts.PinnedServers, Tools: append(slices.Clone(p.opts.PinnedTools), p.ts.Pinned()...)}.Resolve(p.ts.Tools())
	old := p.pins()
	pinned := slices.Clone(old)
	for _, n := range names {
		if slices.ContainsFunc(old, func(t tool.Tool) bool { return t.Name == n }) {
			continue
		}
		if t, ok := p.ts.Get(n); ok {
			pinned = append(pinned, t)
		}
	}
	if len(pinned) == len(old) {
		return
	}
	slices.SortFunc(pinned, func(a, b tool.Tool) int { return cmp.Compare(a.Name, b.Name) })
	p.pinned.Store(&pinned)
	p.log.Info("pinned tools joined", "tools", len(pinned)-len(old))
}

// pinWarnings lists the pins that match nothing and a cap too small for
// them, then the policy's warnings.
func (p *proxy) pinWarnings() []string {
	return append(slices.Clone(p.warnings), p.policyWarnings()...)
}

// Pinned returns the names of the pinned tools, sorted.
func (p *proxy) pinnedNames() []string {
	pinned := p.pins()
	out := make([]string, len(pinned))
	for i, t := range pinned {
		out[i] = t.Name
	}
	return out
}

// namespacedTemplate is the template of the URIs toolsift gives a resource
// that several servers claim (upstream's resources.go).
const namespacedTemplate = "toolsift:{server}/{+uri}"

// addNamespaced registers the template of the namespaced URIs
// (namespacedTemplate) on the session's server, read through the Hub.
// Registered again as it is, it makes the SDK announce
// notifications/resources/list_changed (announcePolicy).
func (s *session) addNamespaced() {
	s.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: namespacedTemplate, Name: "toolsift-namespaced",
		Title: "A resource of one server, under the URI toolsift gives it when another server claims the same URI"}, s.readResource)
}

// newServer returns a server for client sessions of any caller (tests that
// connect in memory, and the SDK's probe of the protocol versions). Its
// list is fixed with proxyOptions.Static.
func (p *proxy) newServer() *mcp.Server { return p.server(p.opts.Static, nil) }

// newSessionServer returns the server of one client session of id: Run
// it on a transport (stdio) or give it to a streamable HTTP handler for
// one session. Its list holds the pinned tools in id's scope; it is fixed
// with proxyOptions.Static.
func (p *proxy) newSessionServer(id authn.Identity) *mcp.Server { return p.server(p.opts.Static, &id) }

// newStatelessServer returns the server of stateless HTTP (MCP 2026-07-28),
// shared by every request: its list is fixed (search_tools, call_tool and
// the pinned tools), and a tools/call naming any other tool of the catalog
// is answered as call_tool would (callByName).
func (p *proxy) newStatelessServer() *mcp.Server {
	srv := p.server(true, nil)
	p.keep(srv)
	return srv
}

// server returns a session's server; static keeps its list fixed; id is
// its one caller (nil: any).
func (p *proxy) server(static bool, id *authn.Identity) *mcp.Server {
	s := &session{p: p, static: static, id: id}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: p.opts.Server.Name, Title: p.opts.Server.Title, Version: p.opts.Server.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Capabilities: &mcp.ServerCapabilities{
			// A fixed list changes too (a pinned tool joins or leaves, one
			// changes upstream): clients of 2026-07-28 hear it on their
			// subscriptions/listen streams (SEP-2575).
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			//lint:ignore SA1019 logging is deprecated by MCP 2026-07-28, but clients of the earlier revisions use it: upstream logs, logs.go
			Logging: &mcp.LoggingCapabilities{},
		},
		Logger:             p.sdkLog,
		CompletionHandler:  s.complete,  // complete.go
		SubscribeHandler:   s.subscribe, // subscribe.go
		UnsubscribeHandler: s.unsubscribe,
	})
	s.srv.AddTool(searchTool(), s.search)
	s.srv.AddTool(callTool(), s.callTool)
	q := p.quarantine()
	for _, t := range s.pins() {
		if t, ok := p.ts.Get(t.Name); ok && !q.has(t.Name) { // as it is now
			if st, def, ok := p.listings.get(t); ok {
				s.add(st, def, true)
			}
		}
	}
	// The namespaced URIs of the Hub (a link or a resource whose URI
	// another server claims: upstream's resources.go) read through the Hub,
	// whether or not a list carries them.
	s.addNamespaced()
	// The caller's Identity first, then the audit log's note of it (a
	// call's record is reported by proxy.call, inside checkTools for one
	// it refuses), then the rest. scoped: policy.go; heard: announce.go;
	// foundTools: session.go.
	mw := []mcp.Middleware{s.withRequestIdentity}
	if p.tracer != nil {
		mw = append(mw, p.traced) // trace.go
	}
	if p.metrics != nil {
		mw = append(mw, p.metrics.middleware) // metrics.go
	}
	if p.opts.Audit != nil {
		mw = append(mw, p.opts.Audit.Middleware)
	}
	s.srv.AddReceivingMiddleware(append(mw, s.checkTools, s.scoped, s.heard, s.foundTools)...)
	s.srv.AddSendingMiddleware(s.quiet)
	s.syncFeatures()
	p.track(s)
	return s.srv
}

// checkTools brings the tools listed up to date before a tools/list or a
// call is answered (and words a call of a tool off the list with a hint,
// unknownToolHint): trust records that another process changed (toolbench trust)
// are read again, and when they were, every session's listed tools are
// synced; a tools/list syncs its own session's in any case (Hub.Trust in
// this process, an upstream change). Checking here rather than watching
// the trust folder costs one stat per server with records per request, and
// nothing while no client asks.
func (s *session) checkTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" && method != "tools/call" {
			return next(ctx, method, req)
		}
		s.freshen(ctx, method, req) // fresh.go
		reloaded, err := s.p.hub.ReloadTrust(ctx)
		if err != nil {
			s.p.log.Warn("reloading tool trust records", "error", err)
		}
		switch {
		case len(reloaded) > 0:
			s.p.log.Info("tool trust records changed on disk; tools listed anew", "servers", reloaded)
			s.p.toolsChanged()
		case method == "tools/list":
			s.syncTools().log(s.p.log)
		}
		if res, refused := s.refuseQuarantined(ctx, method, req); refused {
			return res, nil
		}
		if res, ok, err := s.callByName(ctx, method, req); ok {
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		res, err := next(ctx, method, req)
		if method == "tools/call" && err != nil {
			err = s.p.unknownToolHint(ctx, req, err)
		}
		return res, err
	}
}

// toolsChanged brings every session's list in line with the Toolset: a
// listed tool whose definition changed (upstream, or after Hub.Trust) is
// listed anew, one the Toolset no longer has is taken off the list until
// it comes back; the SDK sends each client whose list changed
// notifications/tools/list_changed. Open calls it on every
// change of the catalog (toolsift.Options.OnChange); sessions also sync
// themselves before each tools/list.
//
// What changed is logged once for all sessions (with how many sessions it
// touched), not once per session: an upstream that changes its tools must
// not flood the log in proportion to the clients.
func (p *proxy) toolsChanged() {
	p.repin()
	p.trustEpoch.Add(1)
	var all toolSync
	touched := 0
	for _, s := range p.liveSessions() {
		if d := s.syncTools(); d.merge(&all) {
			touched++
		}
	}
	if touched > 0 {
		all.log(p.log.With("sessions", touched))
	}
}

// toolsSaid passes an upstream's word that its tools changed
// (notifications/tools/list_changed, or a Refresh: upstream.ListChange.Tools)
// on to the clients of 2026-07-28 listening for tool list changes on a
// server whose list holds a tool of that upstream (a pinned one), when the
// upstream's list is the same as before: such a client lists again at the
// cost of one list, while a word not passed on could leave it with a stale
// list (an upstream that registers a tool again says its list changed).
// It is not called when the list differed (ListChange.ToolsDiffered): the
// difference reached the lists (toolsChanged), whose registrations
// announce it once to each listener whose visible list it changed; passing
// the word as well announced one change twice whenever the SDK's 10 ms
// fold of announcements missed the pair, under load. Clients of
// 2025-11-25 and before hear only of their own list's changes: a server
// without a session of 2026-07-28 is left alone.
func (p *proxy) toolsSaid(server string) {
	p.saidTools(server) // announce.go: a listener of the shared server whose scope holds none of server's tools is not told
	for _, s := range p.liveSessions() {
		if s.listens2026() && slices.ContainsFunc(s.pins(), func(t tool.Tool) bool { return t.Server == server }) {
			s.announceTools()
		}
	}
}

const instructions = "This server stands in for many MCP servers. Call search_tools with what you need to do; " +
	"the tools it finds are added to your tool list, or call them through call_tool."

// searchSchema is search_tools' input schema, made once: searchTool is
// made at every session and every announcement of a list's change (once a
// search that lists tools), and think.SearchTool hashes its canonicalised
// schema.
var searchSchema = sync.OnceValue(func() json.RawMessage { return think.SearchTool().InputSchema })

func searchTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  think.SearchToolName,
		Title: "Search tools",
		Description: "Search every tool of the connected MCP servers by what you need to do. " +
			"Returns the best matching tools with their server, score and input schema. " +
			"They join your tool list; you can also call any of them through call_tool.",
		// The arguments are the agent's search_tools' (think.ParseSearchArgs
		// reads them); the description says what this answer brings.
		InputSchema: searchSchema(),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
}

func callTool() *mcp.Tool {
	return &mcp.Tool{
		Name:  CallToolName,
		Title: "Call a tool",
		Description: "Call a tool that search_tools found, by its name, with its arguments. " +
			"Use it when the tool is not in your tool list.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's name as search_tools gave it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments, as its input schema says."}},` +
			`"required":["name"],"additionalProperties":false}`),
	}
}

// sdkTool is t as the proxy lists it. ok is false when t cannot be listed:
// a name outside ^[a-zA-Z0-9_-]{1,64}$ or an input schema that is not an
// object schema (the SDK would refuse it, and so would clients).
func sdkTool(t tool.Tool) (*mcp.Tool, bool) {
	if !validName.MatchString(t.Name) {
		return nil, false
	}
	schema, ok := objectSchema(t.InputSchema)
	if !ok {
		return nil, false
	}
	// Text from the server is made safe for the client (sanitize.go).
	st := &mcp.Tool{Name: t.Name, Title: text(t.Title), Description: text(t.Description), InputSchema: schemaText(schema)}
	if len(t.OutputSchema) > 0 && json.Valid(t.OutputSchema) {
		st.OutputSchema = schemaText(t.OutputSchema)
	}
	if a := t.Annotations; a != nil {
		st.Annotations = &mcp.ToolAnnotations{
			Title:           text(a.Title),
			DestructiveHint: a.DestructiveHint,
			OpenWorldHint:   a.OpenWorldHint,
			ReadOnlyHint:    a.ReadOnlyHint != nil && *a.ReadOnlyHint,
			IdempotentHint:  a.IdempotentHint != nil && *a.IdempotentHint,
		}
	}
	return st, true
}

// objectSchema returns schema with "type":"object" when it is an object
// schema (an absent type is taken as object), or ok false.
func objectSchema(schema json.RawMessage) (json.RawMessage, bool) {
	if len(schema) == 0 {
		return json.RawMessage(`{"type":"object"}`), true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil || m == nil {
		return nil, false
	}
	typ, has := m["type"]
	if !has {
		m["type"] = json.RawMessage(`"object"`)
		out, err := json.Marshal(m)
		return out, err == nil
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return nil, false
	}
	return schema, true
}

// logger is the proxy's logger, with the user of ctx's Identity when it
// has one (never the credential), and the session's tag when it has an ID
// (streamable HTTP): never the ID itself, which is the session to whoever
// holds the token (see sessionTag).
func (p *proxy) logger(ctx context.Context, s *mcp.ServerSession) *slog.Logger {
	l := p.log
	if id, ok := authn.IdentityFrom(ctx); ok && !id.IsZero() {
		l = l.With("user", id.User)
	}
	if s == nil || s.ID() == "" {
		return l
	}
	return l.With("session", sessionTag(s.ID()))
}

// warnOnly passes on warnings and errors only: the SDK logs every session's
// start at Info.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(a)} }
func (h warnOnly) WithGroup(n string) slog.Handler      { return warnOnly{h.Handler.WithGroup(n)} }
