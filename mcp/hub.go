package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

// DefaultProtocolVersion is the MCP revision a Hub sends in initialize unless
// HubOptions or a server's config says otherwise: the newest revision that
// still starts with initialize.
//
// Measured on the 73 real npm servers of shared/mcp: offered 2025-11-25,
// the SDK's newest (2026-07-28, probed with server/discover, then
// initialize), or 2024-11-05, all 73 connect; each answers with the
// revision it speaks (10 say 2024-11-05, 3 say 2025-03-26, 2 say 2025-06-18,
// the rest 2025-11-25, and 4 accept 2026-07-28 when offered). The probe
// costs the other 69 a request they do not know, before initialize, and a
// round trip, so it is opt-in: "latest" in HubOptions, or protocolVersion
// per server.
const DefaultProtocolVersion = "2025-11-25"

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
	// ErrUnknownTool and ErrToolDisabled wrap tool.ErrUnknown,
	// ErrServerUnavailable tool.ErrUnavailable and ErrInvalidArguments
	// tool.ErrInvalidArguments, so that consumers need not import mcp.
	ErrUnknownTool       = fmt.Errorf("mcp: %w", tool.ErrUnknown)
	ErrToolDisabled      = fmt.Errorf("mcp: tool disabled: %w", tool.ErrUnknown)
	ErrServerUnavailable = fmt.Errorf("mcp: server unavailable: %w", tool.ErrUnavailable)
	ErrInvalidArguments  = fmt.Errorf("mcp: %w", tool.ErrInvalidArguments)
	ErrClosed            = errors.New("mcp: hub closed")
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

	// OnChange, if set, receives every change to the tool list: a server's
	// tools when it connects, re-lists after notifications/tools/list_changed,
	// goes down (all Removed) or comes back. Calls are made one at a time, in
	// order, from a goroutine of the Hub; a slow OnChange delays later
	// changes, not the Hub. Close returns after the last call.
	OnChange func(tool.Change)

	// Backoff is the wait before restarting a server whose session ended;
	// it doubles after each failed restart, up to MaxBackoff. Defaults 500ms
	// and 30s.
	Backoff, MaxBackoff time.Duration

	// MaxRestarts is how many restarts in a row may fail before a server is
	// given up (StateFailed). Default 10; negative means never restart.
	// A server whose first connection fails is not retried.
	MaxRestarts int

	// MaxStarting bounds how many servers connect at the same time;
	// a server's Timeout runs from when it gets its turn. Starting dozens
	// of Node servers at once on a small machine makes each of them slow
	// enough to time out. Default 2×GOMAXPROCS, at least 4.
	MaxStarting int

	// HTTPClient is used for url servers; nil means a client of the Hub's
	// own, whose idle connections Close closes.
	HTTPClient *http.Client

	// Logger receives the Hub's and the SDK's diagnostics; nil discards them.
	Logger *slog.Logger
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
)

// ServerStatus is a snapshot of one server.
type ServerStatus struct {
	Name  string
	State State
	// Err is why the server failed or last went down; nil when it never did.
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
	// Warnings are tools dropped for duplicate or clashing names.
	Warnings []string
}

// A Hub connects to many MCP servers at once, exposes all their tools under
// qualified names, keeps the list current and routes calls. Its methods are
// safe for concurrent use.
type Hub struct {
	opts    HubOptions
	dir     string
	servers map[string]*server
	order   []string // server names, sorted

	// life is the Hub's own lifetime, ended by Close. Not a request ctx.
	life  context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	start sync.Once

	slots     chan struct{} // connection attempts in progress, up to MaxStarting
	ownClient *http.Client  // made by NewHub when HubOptions has none

	mu       sync.Mutex
	closed   bool
	routes   map[string]*server // qualified name → owner, incl. servers that are down
	pending  []tool.Change
	wake     chan struct{} // signals the change dispatcher
	finished chan struct{} // closed when every supervisor has returned
	drained  chan struct{} // closed when the dispatcher has returned
}

// server is one configured server and what the Hub knows of it. All fields
// after cfg are guarded by Hub.mu.
type server struct {
	name   string
	cfg    ServerConfig
	relist chan struct{} // tools/list_changed arrived; capacity 1
	ready  chan struct{} // closed after the first connection attempt

	state     State
	err       error
	session   *sdk.ClientSession
	stderr    *tailBuffer
	tools     map[string]tool.Tool // allowed tools by qualified name
	originals map[string]string    // qualified → original name, allowed tools
	disabled  map[string]string    // qualified → original name, filtered out
	version   string
	info      *sdk.Implementation
	restarts  int
	elapsed   time.Duration
	warnings  []string
	// removed: consumers were told its tools are gone (it went down), so
	// its next connection announces them all as added.
	removed bool
}

// NewHub returns a Hub for the servers in cfg (nil means none). It starts
// nothing: call Connect.
func NewHub(cfg *Config, opts *HubOptions) (*Hub, error) {
	h := &Hub{servers: map[string]*server{}, routes: map[string]*server{}, wake: make(chan struct{}, 1), finished: make(chan struct{}), drained: make(chan struct{})}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Timeout < 0 || h.opts.Backoff < 0 || h.opts.MaxBackoff < 0 {
		return nil, fmt.Errorf("%w: negative duration in HubOptions", ErrConfig)
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
	switch v := h.opts.ProtocolVersion; {
	case v == "":
		h.opts.ProtocolVersion = DefaultProtocolVersion
	case v == "latest":
		h.opts.ProtocolVersion = ""
	case !protocolVersionRE.MatchString(v):
		return nil, fmt.Errorf("%w: HubOptions.ProtocolVersion %q is not a YYYY-MM-DD revision", ErrConfig, v)
	}
	if h.opts.HTTPClient == nil {
		h.ownClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		h.opts.HTTPClient = h.ownClient
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg != nil {
		h.dir = cfg.Dir
		prefixes := map[string]string{}
		for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
			sc := cfg.Servers[name]
			if name == "" {
				return nil, fmt.Errorf("%w: server with an empty name", ErrConfig)
			}
			if err := sc.validate(name); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrConfig, err)
			}
			p := serverPrefix(name)
			if other, ok := prefixes[p]; ok {
				return nil, fmt.Errorf("%w: servers %q and %q get the same name prefix %q", ErrConfig, other, name, p)
			}
			prefixes[p] = name
			s := &server{name: name, cfg: sc, relist: make(chan struct{}, 1), ready: make(chan struct{}), state: StateConnecting}
			if sc.Disabled {
				s.state = StateDisabled
				close(s.ready)
			}
			h.servers[name] = s
			h.order = append(h.order, name)
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
// It returns an error only when ctx ends first or the Hub is closed: a
// failing server does not fail Connect. Servers keep connecting in the
// background after ctx ends, bounded by their own timeouts. Calling Connect
// again waits again; it starts nothing new.
func (h *Hub) Connect(ctx context.Context) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return ErrClosed
	}
	h.start.Do(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed {
			return
		}
		if h.opts.OnChange != nil {
			go h.dispatch()
		} else {
			close(h.drained)
		}
		for _, name := range h.order {
			if s := h.servers[name]; s.state != StateDisabled {
				h.wg.Add(1)
				go h.supervise(s)
			}
		}
	})
	for _, name := range h.order {
		select {
		case <-h.servers[name].ready:
		case <-ctx.Done():
			return fmt.Errorf("mcp: connect: %w", ctx.Err())
		case <-h.life.Done():
			return ErrClosed
		}
	}
	return nil
}

// Tools returns the tools of every ready server, sorted by qualified name.
// Tools of a server that is down or restarting are left out.
func (h *Hub) Tools() []tool.Tool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []tool.Tool
	for _, name := range h.order {
		s := h.servers[name]
		if s.state == StateReady {
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
	for _, name := range h.order {
		s := h.servers[name]
		st := ServerStatus{
			Name:            name,
			State:           s.state,
			Err:             s.err,
			Tools:           len(s.tools),
			Disabled:        len(s.disabled),
			ProtocolVersion: s.version,
			Restarts:        s.restarts,
			ConnectTime:     s.elapsed,
			Warnings:        slices.Clone(s.warnings),
		}
		if s.state != StateReady {
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

// Close stops every session and child process and waits for the Hub's
// goroutines, including the last OnChange call, to return. It is safe to
// call more than once.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.start.Do(func() { close(h.drained) }) // never started
	h.stop()
	h.wg.Wait()
	close(h.finished)
	<-h.drained
	if h.ownClient != nil {
		h.ownClient.CloseIdleConnections()
	}
	return nil
}

// supervise owns one server's connection for the Hub's lifetime: connect,
// serve re-lists, and restart with backoff when the session ends.
func (h *Hub) supervise(s *server) {
	defer h.wg.Done()
	first := true
	failures := 0 // failed connection attempts in a row
	crashes := 0  // sessions in a row that ended soon after they started
	for {
		cs, att, tools, info, elapsed, err := h.connectAndList(s)
		if err != nil {
			if h.life.Err() != nil {
				h.setClosed(s, first)
				return
			}
			failures++
			giveUp := first || h.opts.MaxRestarts < 0 || failures > h.opts.MaxRestarts
			h.setFailed(s, att, err, elapsed, giveUp)
			if first {
				close(s.ready)
			}
			if giveUp {
				return
			}
			first = false
			if !h.sleep(h.backoff(failures)) {
				h.setClosed(s, false)
				return
			}
			continue
		}
		failures = 0
		readyAt := time.Now()
		h.setReady(s, cs, att, tools, info, elapsed)
		if first {
			close(s.ready)
			first = false
		}

		ended := make(chan error, 1)
		go func() { ended <- cs.Wait() }()
		var why error
	serve:
		for {
			select {
			case <-h.life.Done():
				_ = cs.Close()
				<-ended
				if att.cleanup != nil {
					att.cleanup()
				}
				h.setClosed(s, false)
				return
			case <-s.relist:
				ctx, cancel := context.WithTimeout(h.life, h.connectTimeout(s))
				list, err := listTools(ctx, cs)
				cancel()
				if err != nil {
					h.opts.Logger.Warn("mcp: re-listing tools failed", "server", s.name, "error", err)
					continue
				}
				h.updateTools(s, list)
			case err := <-ended:
				why = err
				break serve
			}
		}
		// The session ended without Close: the server exited or the
		// connection broke.
		_ = cs.Close()
		if att.cleanup != nil {
			att.cleanup()
		}
		if h.life.Err() != nil {
			h.setClosed(s, false)
			return
		}
		if why == nil {
			why = errors.New("session ended")
		}
		if att.cmd != nil && att.cmd.ProcessState != nil {
			why = fmt.Errorf("process exited (%s): %w", att.cmd.ProcessState, why)
		}
		// A server that keeps dying right after it starts backs off like
		// one that fails to start.
		if time.Since(readyAt) > h.opts.MaxBackoff {
			crashes = 0
		}
		crashes++
		giveUp := h.opts.MaxRestarts < 0 || crashes > h.opts.MaxRestarts
		h.setDown(s, fmt.Errorf("server %s: connection lost: %w", s.name, why), giveUp)
		if giveUp {
			return
		}
		failures = crashes
		if !h.sleep(h.backoff(crashes)) {
			h.setClosed(s, false)
			return
		}
	}
}

func (h *Hub) backoff(failures int) time.Duration {
	d := h.opts.Backoff
	for i := 1; i < failures && d < h.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, h.opts.MaxBackoff)
}

// sleep waits d or until Close; it reports whether the Hub is still open.
func (h *Hub) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-h.life.Done():
		return false
	}
}

func (h *Hub) connectTimeout(s *server) time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return h.opts.Timeout
}

// connectAndList makes one connection attempt and lists the server's tools.
func (h *Hub) connectAndList(s *server) (*sdk.ClientSession, *attempt, []*sdk.Tool, *sdk.InitializeResult, time.Duration, error) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-h.life.Done():
		return nil, nil, nil, nil, 0, ErrClosed
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(h.life, h.connectTimeout(s))
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "toolsift", Version: "0.1.0"}, &sdk.ClientOptions{
		Logger: h.opts.Logger,
		// No roots: servers such as server-filesystem would otherwise ask
		// for them and replace their configured folders with ours.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.relist <- struct{}{}:
			default:
			}
		},
	})
	cs, att, keep, err := h.connectSession(ctx, s.name, s.cfg, client)
	defer keep()
	if err != nil {
		return nil, att, nil, nil, time.Since(start), describe(ctx, s, att, "connect", err)
	}
	init := cs.InitializeResult()
	var tools []*sdk.Tool
	if init == nil || init.Capabilities == nil || init.Capabilities.Tools != nil {
		tools, err = listTools(ctx, cs)
		if err != nil {
			_ = cs.Close()
			if att.cleanup != nil {
				att.cleanup()
			}
			return nil, att, nil, nil, time.Since(start), describe(ctx, s, att, "tools/list", err)
		}
	}
	return cs, att, tools, init, time.Since(start), nil
}

// describe wraps a connection error with the server, what failed and a
// timeout's length.
func describe(ctx context.Context, s *server, att *attempt, op string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("server %s: %s: no answer in time: %w", s.name, op, context.DeadlineExceeded)
	}
	if att != nil && att.cmd != nil && att.cmd.ProcessState != nil && att.cmd.ProcessState.Exited() {
		return fmt.Errorf("server %s: %s: process exited (%s): %w", s.name, op, att.cmd.ProcessState, err)
	}
	return fmt.Errorf("server %s: %s: %w", s.name, op, err)
}

func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (h *Hub) setClosed(s *server, first bool) {
	h.mu.Lock()
	s.state = StateClosed
	s.session = nil
	h.mu.Unlock()
	if first {
		close(s.ready)
	}
}

func (h *Hub) setFailed(s *server, att *attempt, err error, elapsed time.Duration, giveUp bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.err = err
	s.elapsed = elapsed
	if att != nil && att.stderr != nil {
		s.stderr = att.stderr
	}
	s.session = nil
	s.state = StateRestarting
	if giveUp {
		s.state = StateFailed
	}
}

// setDown marks a server whose session ended and emits the removal of its
// tools. Its routes stay, so that calls report the server, not an unknown
// tool.
func (h *Hub) setDown(s *server, err error, giveUp bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.err = err
	s.session = nil
	s.state = StateRestarting
	if giveUp {
		s.state = StateFailed
	}
	s.removed = true
	if len(s.tools) > 0 {
		h.emitLocked(tool.Change{Server: s.name, Removed: slices.Sorted(maps.Keys(s.tools))})
	}
}

func (h *Hub) setReady(s *server, cs *sdk.ClientSession, att *attempt, tools []*sdk.Tool, init *sdk.InitializeResult, elapsed time.Duration) {
	h.mu.Lock()
	if s.removed { // a restart, not the first connection
		s.restarts++
	}
	s.session = cs
	s.stderr = att.stderr
	s.elapsed = elapsed
	s.state = StateReady
	if init != nil {
		s.version = init.ProtocolVersion
		s.info = init.ServerInfo
	}
	if s.removed {
		s.tools = nil
		s.removed = false
	}
	h.mu.Unlock()
	h.updateTools(s, tools)
}

// updateTools replaces a ready server's tools and emits what changed.
func (h *Hub) updateTools(s *server, list []*sdk.Tool) {
	tools := map[string]tool.Tool{}
	originals := map[string]string{}
	disabled := map[string]string{}
	var warnings []string
	seen := map[string]bool{}

	h.mu.Lock()
	defer h.mu.Unlock()
	if s.state != StateReady {
		return
	}
	for _, t := range list {
		if t == nil || seen[t.Name] {
			if t != nil {
				warnings = append(warnings, fmt.Sprintf("tool %q listed twice; kept the first", t.Name))
			}
			continue
		}
		seen[t.Name] = true
		q := QualifiedName(s.name, t.Name)
		if owner, ok := h.routes[q]; ok && owner != s {
			warnings = append(warnings, fmt.Sprintf("tool %q: qualified name %q is taken by server %s; dropped", t.Name, q, owner.name))
			continue
		}
		if !s.cfg.toolAllowed(t.Name) {
			disabled[q] = t.Name
			continue
		}
		tools[q] = convertTool(s.name, q, t)
		originals[q] = t.Name
	}

	var ch tool.Change
	ch.Server = s.name
	for _, q := range slices.Sorted(maps.Keys(tools)) {
		old, ok := s.tools[q]
		switch {
		case !ok:
			ch.Added = append(ch.Added, tools[q])
		case !sameTool(old, tools[q]):
			ch.Changed = append(ch.Changed, tools[q])
		}
	}
	for _, q := range slices.Sorted(maps.Keys(s.tools)) {
		if _, ok := tools[q]; !ok {
			ch.Removed = append(ch.Removed, q)
		}
	}
	for q, owner := range h.routes {
		if owner == s {
			delete(h.routes, q)
		}
	}
	for q := range tools {
		h.routes[q] = s
	}
	for q := range disabled {
		h.routes[q] = s
	}
	s.tools, s.originals, s.disabled, s.warnings = tools, originals, disabled, warnings
	if !ch.Empty() {
		h.emitLocked(ch)
	}
}

func sameTool(a, b tool.Tool) bool {
	if a.Hash != b.Hash || a.Title != b.Title {
		return false
	}
	ja, _ := json.Marshal(a.Annotations)
	jb, _ := json.Marshal(b.Annotations)
	return bytes.Equal(ja, jb)
}

// convertTool turns an SDK tool into ours at the package boundary.
func convertTool(server, qualified string, t *sdk.Tool) tool.Tool {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil && !bytes.Equal(b, []byte("null")) {
			schema = b
		}
	}
	out := tool.Tool{
		Name:         qualified,
		Server:       server,
		OriginalName: t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  schema,
	}
	if a := t.Annotations; a != nil {
		if out.Title == "" {
			out.Title = a.Title
		}
		// The SDK decodes the two non-pointer hints as false when absent,
		// so only a true value says anything.
		var ann tool.Annotations
		if a.ReadOnlyHint {
			ann.ReadOnlyHint = new(true)
		}
		if a.IdempotentHint {
			ann.IdempotentHint = new(true)
		}
		ann.DestructiveHint = a.DestructiveHint
		ann.OpenWorldHint = a.OpenWorldHint
		if ann != (tool.Annotations{}) {
			out.Annotations = &ann
		}
	}
	return out.WithHash()
}

// emitLocked queues a change for OnChange. h.mu must be held.
func (h *Hub) emitLocked(ch tool.Change) {
	if h.opts.OnChange == nil {
		return
	}
	h.pending = append(h.pending, ch)
	h.signal()
}

func (h *Hub) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// dispatch calls OnChange with queued changes, in order, until every
// supervisor has returned and the queue is empty.
func (h *Hub) dispatch() {
	defer close(h.drained)
	for {
		h.mu.Lock()
		batch := h.pending
		h.pending = nil
		h.mu.Unlock()
		for _, ch := range batch {
			h.opts.OnChange(ch)
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-h.wake:
		case <-h.finished:
			h.mu.Lock()
			n := len(h.pending)
			h.mu.Unlock()
			if n == 0 {
				return
			}
		}
	}
}
