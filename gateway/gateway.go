package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway/audit"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Gateway. The zero value (or nil) gives toolsift
// serve's defaults.
type Options struct {
	// Toolset are the options the Toolset is opened with (its store, pins,
	// embedders). Open sets OnChange, the Gateway's own hook (one set here
	// is called too, before the Gateway's). Its Logger defaults to Telemetry.Logger.
	Toolset toolsift.Options
	// Hub are the options of the Hub Open makes for cfg's servers
	// (timeouts, logins, lazy start, Background, limits). Open sets the
	// hooks the Gateway needs: OnListChange and OnResourceUpdated (one set
	// here is called too, before the Gateway's), ClientRequests and
	// ServerLogLevel (set here, they are refused: the Gateway owns them).
	// Its Store defaults to Toolset.Store, its Logger to Toolset.Logger
	// (and so to Telemetry.Logger).
	Hub upstream.HubOptions

	// Server is what the Gateway says it is in initialize.
	Server ServerInfo
	// Search shapes the search_tools answers and what they learn from.
	Search SearchOptions
	// Limits bound what the upstream servers may cost the Gateway.
	Limits Limits

	// Policy says which servers and tools each caller (its Identity, on
	// the HTTP request's context: authn.Require) may see and call, on
	// every route (docs/serve.md, "Team gateway: policy"); a tool,
	// resource or prompt out of a caller's scope is answered as one that
	// does not exist. A caller without an Identity (stdio, HTTP with a
	// shared token) gets its Anonymous rule. nil: every caller sees
	// everything. Patterns that name no server of the config are Warnings.
	// Its rate limits' buckets are the store's, shared by every Gateway
	// on it, when Hub.Store (by default Toolset.Store) is a
	// store.RateLimiter (store/postgres), and this process's otherwise,
	// or for a request whose store does not answer within 250 ms.
	Policy *config.Policy

	// Audit, when set, keeps one record of every tools/call (audit.Record:
	// who, which tool of which server, when, how long, the outcome, those
	// the Gateway decides itself included: a tool out of the caller's
	// scope, one quarantined; never arguments or results), written before
	// the call's result is returned (or, while its store cannot take it,
	// kept in memory and written later: audit.Log). A call through
	// call_tool is recorded as the tool it names.
	Audit *audit.Log

	// HTTP configures Handler.
	HTTP HTTPOptions

	// PerUser, when set, reaches the url servers it names with each
	// user's own OAuth login (peruser.Logins; docs/serve.md, "Team
	// gateway: per-user logins"): a user's calls of their tools go out on
	// a session of the user's own with the user's token, never another's,
	// and their resources and prompts are not served. It needs each
	// request's user (authn.Require). Open attaches it to the shared Hub,
	// and Close closes it.
	PerUser PerUser

	// Telemetry is where the Gateway reports what it does: logs, metrics
	// and traces. The zero value reports nothing.
	Telemetry Telemetry
}

// ServerInfo is what a Gateway says it is in initialize.
type ServerInfo struct {
	// Name defaults to "toolsift".
	Name string
	// Title is the name a client shows; default "toolsift".
	Title string
	// Version defaults to "devel".
	Version string
}

// SearchOptions shape a Gateway's search_tools answers and session lists.
type SearchOptions struct {
	// MaxTools caps the tools of one session's list: search_tools,
	// call_tool, the pinned tools and the found ones. Default
	// DefaultMaxTools. Pinned tools are listed even past the cap (a
	// warning says so); found tools fill what is left, the least recently
	// used leaving first.
	MaxTools int
	// Budget is the most tokens the tool schemas of one search_tools
	// answer may cost, as the model is sent them (counted by the
	// Toolset's tokenizer); tools are compressed before they are left
	// out. Default think.DefaultBudget. Not Toolset.Budget, the budget of
	// the Toolset's own Think steps.
	Budget int
	// LearnScope says whose calls a search learns from, when the
	// Toolset's usage memory is on (Toolset.NoUsage turns it off): the
	// usage scope of a request's caller. Default LearnByTeam.
	LearnScope LearnScope
}

// Limits bound what the upstream servers may cost a Gateway.
type Limits struct {
	// MaxResultBytes bounds the bytes of upstream results held at once,
	// across calls and sessions; a result waits while others hold too
	// many, and one larger than MaxResultBytes is refused with a result
	// saying so. Default DefaultMaxResultBytes.
	MaxResultBytes int64
	// ClientRequestsPerMinute caps the sampling and elicitation requests
	// each upstream server may send the clients in a minute. Zero means
	// DefaultClientRequestsPerMinute, negative no cap.
	ClientRequestsPerMinute int
}

// Telemetry is where a Gateway reports what it does. Each part left nil
// costs nothing.
type Telemetry struct {
	// Logger gets one line per search and per call (never arguments,
	// results or secrets) and the sessions' comings and goings; nil
	// discards them.
	Logger *slog.Logger
	// Metrics, when set, counts the Gateway's requests, searches, calls
	// and the operations of Toolset.Store (InstrumentStore) and reads its
	// servers', sessions' and audit log's state at each scrape
	// (NewMetrics; register it yourself).
	Metrics *Metrics
	// Tracer, when set, traces the Gateway's requests (docs/serve.md,
	// "Traces"): a server span per MCP request, named by its method, the
	// child of the client's span when the request carries a W3C
	// traceparent (in params._meta, else in its HTTP headers); within it a
	// span for a search_tools search, one for each operation of
	// Toolset.Store (InstrumentStore) and one for each upstream call, whose
	// trace context a url server gets in its traceparent header (Open
	// wraps the transport of a copy of Hub.HTTPClient, or of a client of
	// its own, to send it). Attributes hold methods, tool and server
	// names, outcomes and counts, never a request's or result's text.
	Tracer trace.TracerProvider
	// TraceUser adds the caller's user (enduser.id) to each request's
	// span. Default false: spans name no one.
	TraceUser bool
}

// A LearnScope says which callers share what search learns (the usage
// scope, usage.Caller.Scope, of a request's authn.Identity).
type LearnScope int

const (
	// LearnByTeam keeps one memory per team: the caller's first team,
	// named as the team is; callers with no team, and anonymous callers,
	// share the scope "".
	LearnByTeam LearnScope = iota
	// LearnByUser keeps one memory per user, in the scope "user:" and
	// the user's name: no user's calls move another's ranking. Anonymous
	// callers share the scope "".
	LearnByUser
	// LearnGlobal keeps one memory for every caller, the scope "": a
	// user's calls move another's once two users stand behind a tool
	// (see package usage).
	LearnGlobal
)

// HTTPOptions configure a Gateway's Handler. The zero value gives toolsift
// serve's defaults. Authentication is not among them: it is a middleware
// in front of Handler (authn.Require), which sets each request's Identity.
type HTTPOptions struct {
	// Stateless serves every HTTP client without sessions, whatever its
	// revision: each request is answered on its own. Lists are fixed
	// (search_tools, call_tool and the pinned tools): found tools are
	// called by name or through call_tool. Without it, clients of MCP
	// 2026-07-28 are served so on the same URL, and the others get
	// sessions.
	Stateless bool
	// SessionTimeout closes an HTTP session idle that long; zero means
	// never.
	SessionTimeout time.Duration
	// MaxSessions caps the open HTTP sessions; zero means
	// DefaultMaxSessions. A new session past the cap closes the session
	// idle longest, or is refused (503) when every session has a request in
	// flight. Each session is bound to the credential that opened it (its
	// user when the request has an Identity, else its Authorization
	// header): another gets 403.
	MaxSessions int
	// AllowedOrigins are the origins (scheme://host[:port], or "*") whose
	// requests are served besides loopback origins and the request's own
	// host; a request with another Origin header gets 403. Requests
	// without Origin (not from a browser) are served.
	AllowedOrigins []string
	// BodyTimeout is how long a request body may take to arrive; zero
	// means 30 seconds. A body slower than that gets 408.
	BodyTimeout time.Duration
}

// PerUser reaches the servers each user calls with the user's own OAuth
// login (Options.PerUser; peruser.Logins is the one implementation, with
// the login pages and the sealed store of the logins): the Gateway routes
// the calls of their tools to it, and keeps their resources, prompts,
// completions and subscriptions, which would be one user's, from every
// client. Its methods are called concurrently, Attach first.
type PerUser interface {
	// Servers names the per-user servers: url servers of the config.
	Servers() []string
	// Attach is called once, by Open, before the shared Hub connects:
	// hub are that Hub's options, hooks and client requests set, which
	// each user's Hub starts from; the Authorizer it returns takes the
	// place of hub.Auth (the per-user servers listed for the catalog with
	// one user's login, the others given hub.Auth's tokens). shared
	// returns the shared Hub once it is open, nil before. inScope reports
	// whether the Policy lets id reach a tool of server as it is now
	// (every id without a Policy; none before Open returns): a user out
	// of a server's scope is never offered, nor given, a login to it.
	Attach(hub upstream.HubOptions, shared func() *upstream.Hub, inScope func(id authn.Identity, server string) bool) (upstream.Authorizer, error)
	// Call calls the tool name of server as user ("" when the request
	// names nobody), on the user's own session: an error wrapping
	// ErrLoginNeeded, whose text says where to log in, when the user has
	// no usable login.
	Call(ctx context.Context, user, server, name string, args json.RawMessage) (tool.Result, error)
	// Close ends the users' sessions; Gateway.Close calls it.
	Close() error
}

// LoginPender is what a PerUser may also do (peruser.Logins does): say
// which of its servers nobody has logged in to yet, so that a search_tools
// answer names them as servers whose tools join at the first login, with
// the page to log in at (think.Incomplete.Login), not as servers that
// failed. LoginPending is called concurrently.
type LoginPender interface {
	LoginPending(ctx context.Context, server string) (url string, pending bool)
}

// ErrLoginNeeded is wrapped by the error of a per-user server's call
// (PerUser.Call) that needs the caller to log in first: the call's
// outcome is login-needed, and its text reaches the client as the
// result.
var ErrLoginNeeded = errors.New("gateway: the caller's own login is needed")

// A Gateway serves the tools of many MCP servers as one MCP server, over
// streamable HTTP (Handler) or a stream such as stdio (ServeStdio). It is
// safe for concurrent use.
type Gateway struct {
	ts   *toolsift.Toolset
	p    *proxy
	pu   *perUser // nil without Options.PerUser
	http HTTPOptions
	// traceIdle is the url servers' transport Open made (Options.Telemetry.Tracer
	// without Hub.HTTPClient); nil: the Hub's own.
	traceIdle *http.Transport

	handlerOnce sync.Once
	handler     http.Handler
}

// Open makes a Hub for the servers of cfg (upstream.NewHub, with
// Options.Hub and the Gateway's hooks), opens the Toolset over it
// (toolsift.OpenHub) and returns the Gateway over them, wired so that a
// change upstream (a tool list, a server down or back, a resource, a trust
// record) reaches the clients at once. Close it to stop the servers. It
// fails on invalid Options (an error wrapping ErrOptions) and as
// upstream.NewHub and toolsift.OpenHub do; pins that match nothing are
// warnings (Warnings), not errors.
func Open(ctx context.Context, cfg *config.Config, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	to, ho := o.Toolset, o.Hub
	switch {
	case ho.ClientRequests != nil:
		return nil, fmt.Errorf("%w: Hub.ClientRequests is the Gateway's (it passes upstream requests on to its clients)", ErrOptions)
	case ho.ServerLogLevel != "":
		return nil, fmt.Errorf("%w: Hub.ServerLogLevel is the Gateway's (it asks for every message, each client's level filtering)", ErrOptions)
	case o.Limits.ClientRequestsPerMinute == 0:
		o.Limits.ClientRequestsPerMinute = DefaultClientRequestsPerMinute
	}
	if err := o.HTTP.check(); err != nil {
		return nil, err
	}
	if to.Logger == nil {
		to.Logger = o.Telemetry.Logger
	}
	if ho.Logger == nil {
		ho.Logger = to.Logger
	}
	if o.Telemetry.Metrics != nil || o.Telemetry.Tracer != nil {
		to.Store = InstrumentStore(to.Store, o.Telemetry.Metrics, o.Telemetry.Tracer) // storeobs.go; as it is when nil or instrumented already
	}
	if ho.Store == nil {
		ho.Store = to.Store // nil: the Hub's default folder, the Toolset's too
	}
	var traceIdle *http.Transport // the url servers' transport made here, when traced: Close closes its idle connections
	if o.Telemetry.Tracer != nil {
		ho.HTTPClient, traceIdle = tracedClient(ho.HTTPClient) // trace.go
	}
	// The proxy is made once the Toolset is open (it needs the catalog for
	// its pins); changes before that have no session to reach.
	var px atomic.Pointer[proxy]
	onChange, onList, onResource := to.OnChange, ho.OnListChange, ho.OnResourceUpdated
	to.OnChange = func(c tool.Change) {
		if onChange != nil {
			onChange(c)
		}
		if p := px.Load(); p != nil {
			p.toolsChanged()
		}
	}
	ho.OnListChange = func(c upstream.ListChange) {
		if onList != nil {
			onList(c)
		}
		p := px.Load()
		if p == nil {
			return
		}
		if c.Resources || c.Prompts {
			p.featuresChanged()
		}
		if c.Tools && !c.ToolsDiffered {
			p.toolsSaid(c.Server)
		}
	}
	ho.OnResourceUpdated = func(server, uri string) {
		if onResource != nil {
			onResource(server, uri)
		}
		if p := px.Load(); p != nil {
			p.resourceUpdated(server, uri)
		}
	}
	ho.ClientRequests = newClientRequests(o.Telemetry.Logger, o.Limits.ClientRequestsPerMinute)
	ho.ServerLogLevel = serverLogLevel
	pu, err := newPerUser(o.PerUser, cfg)
	if err != nil {
		return nil, err
	}
	var shared atomic.Pointer[upstream.Hub]
	if pu != nil {
		inScope := func(id authn.Identity, server string) bool {
			p := px.Load()
			return p != nil && p.reaches(id, server)
		}
		if ho.Auth, err = pu.pu.Attach(ho, shared.Load, inScope); err != nil {
			return nil, err
		}
	}
	hub, err := upstream.NewHub(cfg, &ho)
	if err != nil {
		return nil, err
	}
	ts, err := toolsift.OpenHub(ctx, hub, &to)
	if err != nil {
		return nil, err
	}
	shared.Store(hub)
	p, err := newProxy(ts, hub, &proxyOptions{
		Search:      o.Search,
		Limits:      o.Limits,
		Server:      o.Server,
		Telemetry:   o.Telemetry,
		Audit:       o.Audit,
		Policy:      o.Policy,
		PinnedTools: ts.Pinned(), // the Toolset's pins: the config's alwaysLoad, Toolset.Pin
		Static:      o.HTTP.Stateless,
	})
	if err != nil {
		return nil, errors.Join(err, ts.Close())
	}
	p.perUser = pu
	p.limits.rl, _ = ho.Store.(store.RateLimiter) // ratelimit.go: the replicas' buckets
	px.Store(p)
	p.featuresChanged() // what changed while the proxy was being made
	return &Gateway{ts: ts, p: p, pu: pu, http: o.HTTP, traceIdle: traceIdle}, nil
}

// check checks the options of Handler.
func (o *HTTPOptions) check() error {
	switch {
	case o.SessionTimeout < 0:
		return fmt.Errorf("%w: HTTP.SessionTimeout = %v, want 0 (never) or more", ErrOptions, o.SessionTimeout)
	case o.MaxSessions < 0:
		return fmt.Errorf("%w: HTTP.MaxSessions = %d, want > 0", ErrOptions, o.MaxSessions)
	case o.BodyTimeout < 0:
		return fmt.Errorf("%w: HTTP.BodyTimeout = %v, want > 0", ErrOptions, o.BodyTimeout)
	}
	return nil
}

// Toolset returns the Toolset the Gateway serves: its Status, Tools,
// Search and Warnings are the gateway's.
func (g *Gateway) Toolset() *toolsift.Toolset { return g.ts }

// Warnings lists the pins that match nothing, a cap too small for the
// pinned tools, and the policy's warnings (Options.Policy: its own, and
// each pattern that names no server of the config).
func (g *Gateway) Warnings() []string { return g.p.pinWarnings() }

// SetPolicy replaces Options.Policy (nil: every caller sees everything)
// from the next request on: a tool out of a caller's scope under pol
// leaves its sessions' lists (tools/list_changed) and is forgotten by
// them, and the pinned tools that entered a caller's scope join them;
// its sessions' resources, templates and prompts follow (list_changed).
// On the server MCP 2026-07-28 requests share, a listen stream hears
// tools/list_changed, resources/list_changed and prompts/list_changed
// when its caller's visible list of that kind changed (every stream, when
// the policy is removed). It returns pol's warnings (its own, and
// each pattern that names no server of the config), which Warnings has
// from then on. An invalid pol is an error wrapping ErrOptions, and the
// policy in force stays. toolsift serve calls it when its --policy file
// is read again (SIGHUP).
func (g *Gateway) SetPolicy(pol *config.Policy) ([]string, error) {
	if err := g.p.setPolicy(pol); err != nil {
		return nil, err
	}
	return g.p.policyWarnings(), nil
}

// Pinned returns the names of the tools on every session's list besides
// search_tools and call_tool, sorted (under a Policy, a caller's list
// holds those of its scope).
func (g *Gateway) Pinned() []string { return g.p.pinnedNames() }

// Handler returns the Gateway's streamable HTTP handler (one session, with
// its own list, per client of MCP 2025-11-25 or before; none for a client
// of 2026-07-28, nor for any with HTTP.Stateless), behind the checks of
// Options.HTTP: the Origin header, the sessions' binding to their
// credential and their cap, the body's deadline and size. It
// authenticates nobody: a request is its context's Identity's
// (authn.IdentityFrom), anonymous without one, so mount it behind
// authn.Require (or a middleware of your own that sets
// authn.WithIdentity) wherever something other than a loopback address
// reaches it. Mount it at the path clients are given (toolsift serve uses
// /mcp). Every call returns the same handler.
//
// The connections are the server's to bound: give http.Server a
// ReadHeaderTimeout, and its listener LimitListener; no WriteTimeout,
// which would cut the sessions' event streams.
func (g *Gateway) Handler() http.Handler {
	g.handlerOnce.Do(func() { g.handler = g.p.handler(&g.http) })
	return g.handler
}

// ServeStdio serves one client session over r and w (a process's stdin
// and stdout, as desktop clients start toolsift serve) until r ends, the
// client goes away or ctx is done: those are a normal end, nil. It does
// not close r or w. The client is the Identity ctx carries
// (authn.WithIdentity; anonymous without), for the Policy and the logs.
func (g *Gateway) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	t := &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}}
	id, _ := authn.IdentityFrom(ctx)
	err := g.p.newSessionServer(id).Run(ctx, t)
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Close stops the upstream servers (Toolset.Close) and the per-user
// sessions. Serve no more once it is called.
func (g *Gateway) Close() error {
	err := errors.Join(g.pu.close(), g.ts.Close())
	if g.traceIdle != nil {
		g.traceIdle.CloseIdleConnections()
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
