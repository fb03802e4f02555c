package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/tool"
)

// DefaultProtocolVersion is the MCP revision a Hub sends in initialize unless
// HubOptions or a server's config says otherwise: the newest revision that
// still starts with initialize.
//
// Every server of a catalog of 73 real npm servers connects with it, and
// with the SDK's newest or 2024-11-05 too; few accept the newest
// (docs/measurements.md, "MCP protocol versions"). The newest needs a
// server/discover probe, which costs most servers a request they do not
// know, before initialize, and a round trip, so it is opt-in: "latest" in
// HubOptions, or protocolVersion per server.
const DefaultProtocolVersion = "2025-11-25"

// revisionRE matches an MCP revision, as HubOptions.ProtocolVersion names
// one.
var revisionRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Defaults for HubOptions.
const (
	defaultTimeout     = 30 * time.Second
	defaultBackoff     = 500 * time.Millisecond
	defaultMaxBackoff  = 30 * time.Second
	defaultMaxRestarts = 10
)

// Errors returned by Hub methods. Each is wrapped with the tool and server
// at fault.
var (
	// ErrToolDisabled, a tool the config disables, wraps tool.ErrUnknown.
	// Call's other failures wrap the tool package's errors themselves
	// (tool.ErrUnknown, tool.ErrUnavailable, tool.ErrInvalidArguments):
	// test them with errors.Is.
	ErrToolDisabled      = fmt.Errorf("upstream: tool disabled: %w", tool.ErrUnknown)
	errUnknownTool       = fmt.Errorf("upstream: %w", tool.ErrUnknown)
	errServerUnavailable = fmt.Errorf("upstream: server unavailable: %w", tool.ErrUnavailable)
	errInvalidArguments  = fmt.Errorf("upstream: %w", tool.ErrInvalidArguments)
	ErrClosed            = errors.New("upstream: hub closed")
	// ErrOptions is wrapped by NewHub's errors about HubOptions; errors
	// about the servers' config wrap config.ErrInvalid.
	ErrOptions = errors.New("upstream: invalid options")
)

// HubOptions configures a Hub. The zero value is usable.
type HubOptions struct {
	// Timeout bounds each server's connection (start, initialize, first
	// tools/list) when its config has no timeout. Default 30s.
	Timeout time.Duration

	// ProtocolVersion is sent in initialize to servers whose config does
	// not set one. Default DefaultProtocolVersion; "latest" means the SDK's
	// newest revision, probed with server/discover.
	ProtocolVersion string

	// Backoff is the wait before restarting a server whose session ended;
	// it doubles after each failed restart, up to MaxBackoff. Defaults 500ms
	// and 30s.
	Backoff, MaxBackoff time.Duration

	// MaxRestarts is how many restarts in a row may fail before a server is
	// given up (StateFailed). Default 10; negative means never restart.
	// A server whose first connection fails is not retried, until
	// Retry, or until another replica over a shared store.Watcher
	// (HubOptions.Store) lists it (replicas.go).
	MaxRestarts int

	// MaxStarting bounds how many servers connect at the same time;
	// a server's Timeout runs from when it gets its turn. Starting dozens
	// of Node servers at once on a small machine makes each of them slow
	// enough to time out. Default 2×GOMAXPROCS, at least 4.
	MaxStarting int

	// HTTPClient is used for url servers; nil means a client of the Hub's
	// own, whose idle connections Close closes.
	HTTPClient *http.Client

	// MaxMessageBytes bounds what a url server sends in one response body
	// that is not an event stream, and in one server-sent event: a server
	// that sends more fails with an error wrapping ErrTooLarge that names
	// it and the limit. Default 16 MiB, as one line of a stdio server;
	// negative means no limit. See docs/limits.md.
	MaxMessageBytes int

	// MaxTools bounds the tools kept of one server's listing: those beyond
	// are not kept, and a warning says how many (default 5,000).
	// MaxToolPages bounds the pages of one tools/list (default 1,000): a
	// server that sends more fails, as does one that repeats a cursor.
	// MaxDescriptionBytes and MaxSchemaBytes bound one tool's description
	// and its input and output schemas together (defaults 64 KiB and
	// 1 MiB): a larger tool is dropped and named in the server's warnings,
	// the others served. Negative means no limit. See docs/limits.md.
	MaxTools, MaxToolPages, MaxDescriptionBytes, MaxSchemaBytes int

	// MaxSchemaDepth bounds how deeply one listed tool nests objects and
	// arrays, the tool object counting as 1 (default 64; the deepest real
	// tool we know is 25): a deeper tool is cut out of the tools/list
	// answer before it is decoded and named in the server's warnings, the others served. Negative
	// means only the MCP SDK's own limit (1,000 levels in one message).
	// Any other message deeper than the SDK decodes fails the request it
	// answers with an error naming the server, or is dropped with a
	// logged warning. See docs/limits.md.
	MaxSchemaDepth int

	// Auth, if set, gives url servers the access tokens they ask for (MCP
	// authorization): see Authorizer. oauth.Store is one.
	Auth Authorizer

	// Logger receives the Hub's and the SDK's diagnostics; nil discards them.
	// A warning that is also one of a server's ServerStatus.Warnings (a
	// tool changed since first seen, a tool dropped for its depth) has it,
	// word for word, in its "warning" attribute, so that a program that
	// prints both can print it once.
	// Secrets in server URLs are redacted from them (see the package doc).
	Logger *slog.Logger

	// Background makes Connect return as soon as the servers it does not
	// start are announced: the lazy ones, listed from the cache (applied
	// before Connect returns), the disabled and the unusable ones. The
	// servers it starts keep connecting in the background,
	// StateConnecting in Status meanwhile, and each one's tools are
	// applied when it has listed them; one that fails is
	// StateFailed, as at any Connect, and Progress hears of each. A
	// server that must start to list its tools then delays nothing: a
	// proxy can answer its clients with what it has at once (toolsift
	// serve does). Without it Connect waits for every server.
	Background bool

	// Start says when servers start: StartLazy (the default) leaves a server
	// whose tool list is in the cache unstarted until a call needs it;
	// StartEager starts every server at Connect. See the package doc.
	Start StartMode

	// Store keeps what the Hub keeps between runs and shares with other
	// processes: each server's tool list (its cache entry, under
	// catalog/) and its tools' trust records (under trust/). nil means
	// store.NewDir(os.UserCacheDir()/toolsift), the folder toolsift has
	// always used (with a warning and nothing kept when there is no user
	// cache folder or it is refused). store.NewMemory() keeps nothing past
	// this process: every server starts at Connect. The Hub does not close
	// it.
	Store store.Store

	// IdleTimeout, in StartLazy mode, stops a server that has not been
	// called for that long; it starts again on its next call, and its tools
	// stay listed meanwhile. Default 5 minutes; negative means never.
	IdleTimeout time.Duration

	// Progress, if set, is told how far Connect is: once when it starts
	// the servers, then each time a server's first connection attempt is
	// over, with the counts of that moment. Calls are one at a time and
	// never hold the Hub's lock (Progress may call Status). A server whose
	// first attempt ends after Connect returned (its ctx ended first) is
	// still reported.
	//
	// A function rather than a status to poll: Connect, and toolsift.Open
	// around it, return only when every server is done (unless Background
	// is set), and Open's caller has no Hub to poll until then.
	Progress func(Progress)

	// The options below are a proxy's: how it forwards what servers send
	// besides their tools' results (see Passthrough). They must be known
	// when a server connects, so they are set here, not on the
	// Passthrough; a program that only lists and calls tools leaves them
	// zero.

	// ClientRequests, if set, answers the requests servers send their
	// client (sampling, elicitation, roots) that it declares; the others
	// are declined with a JSON-RPC error saying so. See ClientRequests.
	ClientRequests ClientRequests

	// OnResourceUpdated, if set, is told of every
	// notifications/resources/updated a server sends for a resource
	// subscribed to through Passthrough.Subscribe: the server's name, and
	// the URI the subscription was given (a namespaced toolsift:SERVER/URI
	// stays so; servers that list the same URI each tell of their own).
	// It is called from the SDK's goroutines, in the order each server
	// sent them, and must not block for long.
	OnResourceUpdated func(server, uri string)

	// ServerLogLevel, if set, is asked of every server that declares
	// logging (logging/setLevel) when it connects: the least severe log
	// messages it should send ("debug" … "emergency"), which WithLog
	// hands to the request they belong to. Empty: nothing is asked.
	ServerLogLevel string

	// OnListChange, if set, is told when a server's resources or prompts
	// changed (see ListChange), after Passthrough.Resources and Prompts
	// show the new lists, and when it said its tools changed
	// (ListChange.Tools), after they were listed again and any difference
	// applied (see Connect). Calls are one at a time, from the server's
	// supervisor: it may call the Hub, but a slow one delays that server's
	// next change.
	OnListChange func(ListChange)
}

// Progress counts a Hub's servers by how far their connection got (see
// HubOptions.Progress). Ready + Failed + Pending + Disabled = Servers.
type Progress struct {
	Servers int
	// Ready servers have their tools listed: connected, or lazy (listed
	// from the cache, started on their first call).
	Ready int
	// Failed servers are not usable: their first connection failed, the
	// config made them unusable, or they went down since.
	Failed int
	// Pending servers are still connecting; the count only shrinks.
	Pending int
	// Disabled servers are turned off in the config.
	Disabled int
}

// State is where a server is in its life.
type State string

// States of a server.
const (
	StateConnecting State = "connecting"
	StateReady      State = "ready"
	StateRestarting State = "restarting" // session ended; tools unavailable until it is back
	StateFailed     State = "failed"
	StateDisabled   State = "disabled"
	StateClosed     State = "closed"
	// StateLazy: not started; its tools, from the cache or from an earlier
	// session, are listed and its first call starts it (StateConnecting
	// while it does).
	StateLazy State = "lazy"
)

// ServerStatus is a snapshot of one server.
type ServerStatus struct {
	Name  string
	State State
	// Err is why the server failed or last went down; nil when it never did.
	// Secrets in the server's URL are redacted from its text (see the
	// package doc).
	Err error
	// Stderr is the tail of a stdio server's standard error.
	Stderr string
	// Tools is how many tools it exposes (after allowedTools/disabledTools);
	// Disabled how many were filtered out.
	Tools, Disabled int
	// ProtocolVersion is the revision negotiated in initialize.
	ProtocolVersion string
	// ServerName and ServerVersion are what the server said it is.
	ServerName, ServerVersion string
	// Restarts counts reconnections after the first.
	Restarts int
	// ConnectTime is how long the last connection attempt took, including
	// listing tools.
	ConnectTime time.Duration
	// Warnings are tools dropped for duplicate or clashing names or for an
	// input schema that is not an object schema, and schemas repaired (an
	// object schema without "type" gets "type":"object").
	Warnings []string
	// Changed are the tools that differ from what the server first listed
	// under their names (rug pulls: see Hub.Trust); each also has a line in
	// Warnings. Sorted by name.
	Changed []ChangedTool
	// ApplyErr is the error the change sink (see Connect) returned for this
	// server's last change, nil when it succeeded.
	ApplyErr error
	// FromCache is set while its tools are the cache's, not yet confirmed
	// by the server in this Hub; CachedAt is when the server listed the
	// tools its cache entry holds (zero when it has none).
	FromCache bool
	CachedAt  time.Time
}

// A Hub connects to many MCP servers at once, exposes all their tools under
// qualified names, keeps the list current and routes calls. Its methods are
// safe for concurrent use.
type Hub struct {
	opts    HubOptions
	cfg     *config.Config // as given to NewHub
	dir     string
	servers map[string]*server
	order   []*server // servers, sorted by name

	// life is the Hub's own lifetime, ended by Close. Not a request ctx.
	life  context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	start sync.Once
	// started: the servers Connect started, which a Background Connect
	// does not wait for. Written once, in start.
	started map[*server]bool

	redact    *redact.Scrubber // server URLs' secrets, out of errors and logs
	slots     chan struct{}    // connection attempts in progress, up to MaxStarting
	ownClient *http.Client     // made by NewHub when HubOptions has none

	mu     sync.Mutex
	closed bool
	routes map[string]*server // qualified name → owner, incl. servers that are down

	// apply is the change sink Connect was given (nil: none). Written
	// once, by the first Connect, before any server starts.
	apply func(context.Context, tool.Change) error
	// changeMu makes apply calls one at a time; progressMu Progress
	// calls.
	changeMu   sync.Mutex
	progressMu sync.Mutex

	pt Passthrough // what a proxy forwards; Passthrough returns it

	trust trustGen // writes trust records; tells ReloadTrust that another process wrote some
	// freshUntil: until this time (mono) no server's tool list outlives
	// its ttlMs, so Freshen has nothing to do; 0 makes it look. Set by
	// Freshen and reset by a listing and Close, under mu.
	freshUntil atomic.Int64
}

// NewHub returns a Hub for the servers in cfg (nil means none). It starts
// nothing: call Connect. A config that does not validate (see
// config.Config.Validate), or two servers whose names give the same prefix,
// fail with an error wrapping config.ErrInvalid; bad options with one
// wrapping ErrOptions. Servers with an Err are not an error: they are
// reported as failed and never started.
func NewHub(cfg *config.Config, opts *HubOptions) (*Hub, error) {
	h := &Hub{cfg: cfg, servers: map[string]*server{}, routes: map[string]*server{}}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Timeout < 0 || h.opts.Backoff < 0 || h.opts.MaxBackoff < 0 {
		return nil, fmt.Errorf("%w: negative duration in HubOptions", ErrOptions)
	}
	if h.opts.Timeout == 0 {
		h.opts.Timeout = defaultTimeout
	}
	if h.opts.Backoff == 0 {
		h.opts.Backoff = defaultBackoff
	}
	if h.opts.MaxBackoff == 0 {
		h.opts.MaxBackoff = max(defaultMaxBackoff, h.opts.Backoff)
	}
	if h.opts.MaxStarting <= 0 {
		h.opts.MaxStarting = max(4, 2*runtime.GOMAXPROCS(0))
	}
	h.slots = make(chan struct{}, h.opts.MaxStarting)
	if h.opts.MaxRestarts == 0 {
		h.opts.MaxRestarts = defaultMaxRestarts
	}
	if l := h.opts.ServerLogLevel; l != "" && !slices.Contains(logLevels, l) {
		return nil, fmt.Errorf("%w: HubOptions.ServerLogLevel %q: want one of %s", ErrOptions, l, strings.Join(logLevels, ", "))
	}
	switch v := h.opts.ProtocolVersion; {
	case v == "":
		h.opts.ProtocolVersion = DefaultProtocolVersion
	case v == "latest":
		h.opts.ProtocolVersion = ""
	case !revisionRE.MatchString(v):
		return nil, fmt.Errorf("%w: HubOptions.ProtocolVersion %q is not a YYYY-MM-DD revision", ErrOptions, v)
	}
	if h.opts.HTTPClient == nil {
		h.ownClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		h.opts.HTTPClient = h.ownClient
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if h.opts.Start != StartLazy && h.opts.Start != StartEager {
		return nil, fmt.Errorf("%w: HubOptions.Start %d is not StartLazy or StartEager", ErrOptions, h.opts.Start)
	}
	if h.opts.IdleTimeout == 0 {
		h.opts.IdleTimeout = defaultIdleTimeout
	}
	if h.opts.Store == nil {
		h.opts.Store = defaultStore(h.opts.Logger)
	}
	var urls []string
	if cfg != nil {
		for _, sc := range cfg.Servers {
			urls = append(urls, sc.URL)
		}
	}
	// Secrets in server URLs reach neither errors nor logs.
	h.redact = redact.NewScrubber(urls)
	h.opts.Logger = slog.New(h.redact.Handler(h.opts.Logger.Handler()))
	h.pt.h, h.pt.calls.log = h, h.opts.Logger
	h.trust.st, h.trust.log = h.opts.Store, h.opts.Logger
	if cfg != nil {
		h.dir = cfg.Dir
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		prefixes := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
			sc := cfg.Servers[name]
			p := serverPrefix(name)
			if other, ok := prefixes[p]; ok {
				return nil, fmt.Errorf("%w: servers %q and %q get the same name prefix %q", config.ErrInvalid, other, name, p)
			}
			prefixes[p] = name
			s := &server{h: h, name: name, cfg: sc, relist: make(chan struct{}, 1), refresh: make(chan relistAsk), ready: make(chan struct{}), state: StateConnecting}
			s.deep = &deepFilter{server: name, max: limit(h.opts.MaxSchemaDepth, defaultMaxSchemaDepth), sdk: sdkMaxDepth, logger: h.opts.Logger, note: func(msg []byte) { h.pt.calls.noteMessage(s, msg) }}
			switch {
			case sc.Disabled:
				s.state = StateDisabled
				close(s.ready)
			case sc.Err != nil:
				// Unusable as configured (an ${input:ID} without a value,
				// an unreadable envFile): reported, never started.
				s.state = StateFailed
				s.err = fmt.Errorf("server %s: %w", name, sc.Err)
				close(s.ready)
			}
			h.servers[name] = s
			h.order = append(h.order, s)
		}
	}
	if h.dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		h.dir = wd
	}
	h.life, h.stop = context.WithCancel(context.Background())
	return h, nil
}

// Connect starts every enabled server concurrently and waits until each has
// connected and listed its tools, or failed (see Status), or ctx is done.
//
// apply, if not nil, is the Hub's change sink: it receives every change to
// the tool list, a server's tools when it connects, re-lists after
// notifications/tools/list_changed or Refresh, goes down (all Removed) or
// comes back. It is called synchronously, one call at a time, in order for
// each server, so that wiring an index is one line (hub.Connect(ctx,
// ix.Apply)): Connect returns after every connected server's first change
// has been applied, and a re-list is applied before the next. Its ctx ends
// when the Hub is closed. An error is kept in that server's
// ServerStatus.ApplyErr (and logged); the server stays up. A slow apply
// delays its server's next change, not the Hub.
//
// In StartLazy mode a server whose tools are in the cache is not started:
// its cached tools are listed (and applied) at once, and its first call
// starts it. With HubOptions.Background it waits only for the lazy
// servers' announcement; the servers it starts go on connecting (see
// Background). It returns an error only when ctx ends first or the Hub is
// closed: a failing server does not fail Connect. Servers keep connecting
// in the background after ctx ends, bounded by their own timeouts. Calling
// Connect again waits again and starts nothing new; the sink is the first
// call's, and a later call's apply must be nil (else the error wraps
// ErrOptions: the changes it would expect go to the first sink).
func (h *Hub) Connect(ctx context.Context, apply func(context.Context, tool.Change) error) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return ErrClosed
	}
	started := false
	h.start.Do(func() {
		started = true
		h.apply = apply
		h.trust.watch(ctx, h.life, &h.wg)
		cached := readCatalogs(ctx, h.opts.Store, h.order, h.opts.Start == StartLazy)
		watchCatalog(h) // replicas.go
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			return
		}
		var lazy []*server
		h.started = map[*server]bool{}
		for _, s := range h.order {
			if s.state == StateConnecting && !s.restFromCache(cached[s.name]) {
				h.started[s] = true
				h.wg.Add(1)
				go s.supervise()
			} else if s.state == StateLazy {
				lazy = append(lazy, s)
			}
		}
		announce(&h.wg, lazy)
	})
	if !started && apply != nil {
		return fmt.Errorf("%w: Connect with a change sink: the Hub was connected (or closed) before, and its changes go to the first Connect's sink", ErrOptions)
	}
	if started {
		h.reportProgress()
	}
	for _, s := range h.order {
		if h.opts.Background && h.started[s] {
			continue
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return fmt.Errorf("upstream: connect: %w", ctx.Err())
		case <-h.life.Done():
			return ErrClosed
		}
	}
	return nil
}

// reportProgress tells HubOptions.Progress the counts of now. progressMu
// keeps the calls in the order of their counts.
func (h *Hub) reportProgress() {
	if h.opts.Progress == nil {
		return
	}
	h.progressMu.Lock()
	defer h.progressMu.Unlock()
	h.mu.Lock()
	p := Progress{Servers: len(h.order)}
	for _, s := range h.order {
		switch {
		case s.state == StateDisabled:
			p.Disabled++
		case s.offersTools():
			p.Ready++
		case s.state == StateConnecting:
			p.Pending++
		default:
			p.Failed++
		}
	}
	h.mu.Unlock()
	h.opts.Progress(p)
}

// Tools returns the tools of every ready or lazy server, sorted by qualified
// name. Tools of a server that is down or restarting are left out.
func (h *Hub) Tools() []tool.Tool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []tool.Tool
	for _, s := range h.order {
		if s.offersTools() {
			out = slices.AppendSeq(out, maps.Values(s.tools))
		}
	}
	slices.SortFunc(out, func(a, b tool.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Status returns a snapshot of every configured server, sorted by name.
func (h *Hub) Status() []ServerStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ServerStatus, 0, len(h.order))
	for _, s := range h.order {
		st := ServerStatus{
			Name:            s.name,
			State:           s.state,
			Err:             s.err,
			Tools:           len(s.tools),
			Disabled:        len(s.disabled),
			ProtocolVersion: s.version,
			Restarts:        s.restarts,
			ConnectTime:     s.elapsed,
			Warnings:        slices.Clone(s.warnings),
			Changed:         slices.Clone(s.changed),
			ApplyErr:        s.applyErr,
			FromCache:       s.lazy.fromCache,
			CachedAt:        s.lazy.cachedAt,
		}
		if !s.offersTools() {
			st.Tools = 0
		}
		if s.stderr != nil {
			st.Stderr = s.stderr.String()
		}
		if s.info != nil {
			st.ServerName, st.ServerVersion = s.info.Name, s.info.Version
		}
		out = append(out, st)
	}
	return out
}

// Refresh lists the tools of every ready server again, as if each had sent
// notifications/tools/list_changed, and returns when every change has been
// applied (the change sink has returned: see Connect) or ctx ends. Lazy servers are
// started, which lists their tools. Other servers that are not ready are
// left to their own restarts. The error joins each server's failure to
// re-list or start; servers that fail to re-list keep the tools they had.
func (h *Hub) Refresh(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	var ready, lazy []*server
	for _, s := range h.order {
		switch s.state {
		case StateReady:
			ready = append(ready, s)
		case StateLazy:
			lazy = append(lazy, s)
		}
	}
	h.mu.Unlock()
	started := startAll(ctx, lazy)
	errs, err := h.relist(ctx, ready, true)
	if err != nil {
		return err
	}
	errs = append([]error{<-started}, errs...)
	return h.redact.Err(errors.Join(errs...))
}

// Retry starts again the server named name if it failed (its first
// connection, or its restarts ran out) and waits until that connection
// attempt is over: nil when the server is ready (its tools are applied
// as at any connection), else why it failed again. A server in any other
// state is left alone (nil), as is one its config makes unusable. It is
// for a server that failed for want of something given since, such as a
// login: a Hub does not retry a failed first connection by itself.
func (h *Hub) Retry(ctx context.Context, name string) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	s := h.servers[name]
	switch {
	case s == nil:
		h.mu.Unlock()
		return fmt.Errorf("upstream: retry: no server %q", name)
	case s.state != StateFailed || s.cfg.Err != nil:
		h.mu.Unlock()
		return nil
	}
	// As a lazy start: callers of its tools wait for the attempt.
	s.state = StateConnecting
	s.lazy.wake = make(chan struct{})
	wait := s.lazy.wake
	h.opts.Logger.Info("upstream: retrying failed server", "server", s.name)
	h.wg.Add(1)
	go s.supervise()
	h.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return fmt.Errorf("upstream: retry %s: %w", name, ctx.Err())
	case <-h.life.Done():
		return ErrClosed
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.state == StateFailed {
		return s.err
	}
	return nil
}

// Freshen lists again the tools of each ready server whose tool list has
// outlived the time the server said it stays fresh (ttlMs of its
// tools/list result, MCP 2026-07-28, SEP-2549), and waits until what
// changed is applied; a server that gave no ttlMs, or 0, is never stale
// here (its tools/list_changed notifications keep its list current, and
// re-listing on every ask would cost it a request per client request). A
// proxy calls it when a client asks for the list (toolsift serve: a
// tools/list or a search_tools). It costs nothing while every list is
// fresh. The error joins the servers' failures, or is ctx's or ErrClosed.
func (h *Hub) Freshen(ctx context.Context) error {
	if until := h.freshUntil.Load(); until != 0 && monoNow() < until {
		return nil // every list is fresh: no lock, as a proxy asks at every search
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	var stale []*server
	now := time.Now()
	until := int64(math.MaxInt64)
	for _, s := range h.order {
		if s.listTTL <= 0 {
			continue
		}
		if s.state == StateReady && now.Sub(s.listedAt) >= s.listTTL {
			stale = append(stale, s)
		}
		// Any server's, ready or not: one that becomes ready with a list
		// that outlived its ttlMs is then looked at.
		until = min(until, mono(s.listedAt.Add(s.listTTL)))
	}
	if len(stale) == 0 {
		// Under h.mu, which a listing (server.listTools) holds to reset it.
		h.freshUntil.Store(until)
	}
	h.mu.Unlock()
	if len(stale) == 0 {
		return nil
	}
	errs, err := h.relist(ctx, stale, false)
	if err != nil {
		return err
	}
	return h.redact.Err(errors.Join(errs...))
}

// relist asks the supervisors of ready servers to list their tools again
// (said: see relistAsk) and waits until each change is applied; errs are
// the servers' failures, err the end of ctx or of the Hub.
func (h *Hub) relist(ctx context.Context, ready []*server, said bool) (errs []error, err error) {
	// A supervisor takes the ask between two events of its session; one
	// whose session ended meanwhile never will, so look again now and then.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	answers := make([]chan error, len(ready))
	for i, s := range ready {
		if answers[i], err = s.askRelist(ctx, said, tick.C); err != nil {
			return nil, err
		}
	}
	for _, a := range answers {
		if a == nil {
			continue // went down: its restart lists anew
		}
		select {
		case err := <-a:
			errs = append(errs, err)
		case <-ctx.Done():
			return nil, fmt.Errorf("upstream: refresh: %w", ctx.Err())
		case <-h.life.Done():
			return nil, ErrClosed
		}
	}
	return errs, nil
}

// Close stops every session and child process and waits for the Hub's
// goroutines, including the last call of the change sink, to return. Calls in flight
// return at once with an error wrapping ErrClosed; it does not wait for
// them. A stdio server gets 2s in all to exit after its stdin is closed
// and SIGTERM, then its process group is killed. It is safe to call more
// than once.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.freshUntil.Store(0)
	h.mu.Unlock()
	h.start.Do(func() {}) // never started: nothing may start now
	h.stop()
	h.wg.Wait()
	h.mu.Lock()
	for _, s := range h.servers {
		if s.state == StateLazy { // never started, or stopped as idle
			s.state = StateClosed
		}
	}
	h.mu.Unlock()
	if h.ownClient != nil {
		h.ownClient.CloseIdleConnections()
	}
	return nil
}

// Config returns the config the Hub was made from (NewHub's cfg, nil for
// none). The Hub read it in NewHub: changing it changes nothing.
func (h *Hub) Config() *config.Config { return h.cfg }

// Store returns the store the Hub keeps its servers' tool lists and trust
// records in: HubOptions.Store, or the default one NewHub opened.
func (h *Hub) Store() store.Store { return h.opts.Store }

// Passthrough returns what a proxy forwards of the Hub's servers besides
// their tools (see Passthrough). It is the same for the Hub's life.
func (h *Hub) Passthrough() *Passthrough { return &h.pt }
