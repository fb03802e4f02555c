package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
)

// server is one configured server and what the Hub knows of it. Its
// methods are all that is about one server: its life (supervise, connect,
// restart, lazy start, idle stop) here, its transports in transport.go,
// its tool list and cache entry in server_tools.go, its trust records in
// trust.go, and for the passthrough its client and the requests it sends
// (passthrough_clientreq.go, roundtrip.go), its other lists
// (passthrough_features.go) and the requests made to it other than calls
// (passthrough.go). All fields after cfg are guarded by h.mu.
type server struct {
	h       *Hub // the Hub it belongs to: its options, lifetime and lock
	name    string
	cfg     config.Server
	relist  chan struct{}  // tools/list_changed arrived; capacity 1
	refresh chan relistAsk // Refresh, Freshen, ReloadTrust ask; the supervisor answers when applied
	ready   chan struct{}  // closed after the first connection attempt

	state     State
	err       error
	session   *mcp.ClientSession
	att       *attempt // the session's connection attempt
	stderr    *tailBuffer
	tools     map[string]tool.Tool // allowed tools by qualified name
	originals map[string]string    // qualified → original name, allowed tools
	disabled  map[string]string    // qualified → original name, filtered out
	version   string
	info      *mcp.Implementation
	restarts  int
	elapsed   time.Duration
	warnings  []string
	changed   []ChangedTool // tools that differ from their trust records (trust.go)
	overTools int           // tools of the last listing beyond MaxTools
	trust     trustSet
	deep      *deepFilter // rewrites its too deeply nested messages; guard_depth.go
	deepTools []deepTool  // tools of the last listing dropped for their depth
	// listTTL is how long the last tool listing stays fresh by the
	// server's ttlMs (MCP 2026-07-28), 0 when it gave none; listedAt is
	// when it was listed (Hub.Freshen).
	listTTL  time.Duration
	listedAt time.Time
	applyErr error
	// removed: consumers were told its tools are gone (it went down), so
	// its next connection announces them all as added.
	removed bool
	lazy    lazyServer // the cache and lazy starts; see lazy.go
	feat    features   // resources and prompts; see passthrough_features.go
}

// lazyServer is what the Hub keeps per server for the cache and lazy
// starts. fp is set before the server's first goroutine starts and never
// changes; the other fields are guarded by Hub.mu.
type lazyServer struct {
	fp        string    // fingerprint of how it is launched; "" when it cannot be cached
	cachedAt  time.Time // when its cache entry was made
	fromCache bool      // its tools are the cache's, not yet confirmed by the server

	wake        chan struct{} // a lazy start is under way; closed after its first attempt
	readyClosed bool          // server.ready is closed
	calls       int           // calls in progress
	lastCall    time.Time     // when the last call started or ended
}

// offersTools reports whether consumers have s's tools: it is ready, lazy,
// or starting from lazy.
func (s *server) offersTools() bool {
	return s.state == StateReady || s.state == StateLazy || s.state == StateConnecting && s.lazy.wake != nil
}

// supervise owns one server's connection for the Hub's lifetime: connect,
// serve re-lists, and restart with backoff when the session ends.
func (s *server) supervise() {
	h := s.h
	defer h.wg.Done()
	first := true
	failures := 0 // failed connection attempts in a row
	crashes := 0  // sessions in a row that ended soon after they started
	for {
		cs, att, tools, info, elapsed, err := s.connectAndList()
		if err != nil {
			if h.life.Err() != nil {
				s.setClosed(first)
				return
			}
			failures++
			giveUp := first || h.opts.MaxRestarts < 0 || failures > h.opts.MaxRestarts
			s.apply(s.setFailed(att, err, elapsed, giveUp))
			if first {
				s.attempted()
			}
			if giveUp {
				return
			}
			first = false
			if !s.sleep(s.backoff(failures)) {
				s.setClosed(false)
				return
			}
			continue
		}
		failures = 0
		readyAt := time.Now()
		s.apply(s.setReady(cs, att, tools, info, elapsed))
		s.listFeatures(cs, featResources|featPrompts)
		s.storeCatalog()
		if first {
			s.attempted()
			first = false
		}
		idle := s.idleTimer()

		ended := make(chan error, 1)
		go func() { ended <- cs.Wait() }()
		var why error
	serve:
		for {
			select {
			case <-h.life.Done():
				// Close the connection first: the SDK's session Close
				// waits for calls in flight, which a server that never
				// answers would hold forever. The calls themselves have
				// already returned ErrClosed (see Call).
				if att.cleanup != nil {
					att.cleanup()
				}
				_ = cs.Close()
				<-ended
				s.setClosed(false)
				return
			case <-s.relist:
				// A re-list that Close cancelled is no failure.
				differed, err := s.relistTools(cs)
				if err != nil && h.life.Err() == nil {
					h.opts.Logger.Warn("upstream: re-listing tools failed", "server", s.name, "error", err)
				}
				if err == nil {
					s.toolsSaid(differed)
				}
			case ask := <-s.refresh:
				differed, err := s.relistTools(cs)
				if err == nil && ask.said {
					s.toolsSaid(differed)
				}
				ask.done <- err
			case <-s.feat.signal():
				if s.listFeatures(cs, s.feat.take()) {
					s.storeCatalog()
				}
			case err := <-ended:
				why = err
				break serve
			case <-idleC(idle):
				if s.goIdle(idle) {
					_ = cs.Close()
					<-ended
					if att.cleanup != nil {
						att.cleanup()
					}
					return
				}
			}
		}
		// The session ended without Close: the server exited or the
		// connection broke.
		_ = cs.Close()
		if att.cleanup != nil {
			att.cleanup()
		}
		if h.life.Err() != nil {
			s.setClosed(false)
			return
		}
		if why == nil {
			why = errors.New("session ended")
		}
		if att.wedged() {
			why = fmt.Errorf("a call could not be written in time: %w", errWedged)
		} else if att.cmd != nil && att.cmd.ProcessState != nil {
			why = fmt.Errorf("process exited (%s): %w", att.cmd.ProcessState, why)
		}
		// A server that keeps dying right after it starts backs off like
		// one that fails to start.
		if time.Since(readyAt) > h.opts.MaxBackoff {
			crashes = 0
		}
		crashes++
		giveUp := h.opts.MaxRestarts < 0 || crashes > h.opts.MaxRestarts
		s.apply(s.setDown(fmt.Errorf("server %s: connection lost: %w", s.name, why), giveUp))
		if giveUp {
			return
		}
		failures = crashes
		if !s.sleep(s.backoff(crashes)) {
			s.setClosed(false)
			return
		}
	}
}

// backoff is the wait before s's next connection attempt after failures
// in a row.
func (s *server) backoff(failures int) time.Duration {
	h := s.h
	d := h.opts.Backoff
	for i := 1; i < failures && d < h.opts.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, h.opts.MaxBackoff)
}

// sleep waits d or until Close; it reports whether the Hub is still open.
func (s *server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.h.life.Done():
		return false
	}
}

func (s *server) connectTimeout() time.Duration {
	h := s.h
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return h.opts.Timeout
}

// connectAndList makes one connection attempt and lists the server's tools.
// The start slot is given back before a failed attempt is cleaned up, and
// the time reported is the attempt's, not the cleanup's.
func (s *server) connectAndList() (*mcp.ClientSession, *attempt, []*mcp.Tool, *mcp.InitializeResult, time.Duration, error) {
	h := s.h
	select {
	case h.slots <- struct{}{}:
	case <-h.life.Done():
		return nil, nil, nil, nil, 0, ErrClosed
	}
	release := sync.OnceFunc(func() { <-h.slots })
	defer release()
	start := time.Now()
	ctx, cancel := context.WithTimeout(h.life, s.connectTimeout())
	defer cancel()
	client := s.newClient() // see passthrough_clientreq.go
	cs, att, keep, err := s.connectSession(ctx, client)
	defer keep()
	if err != nil {
		elapsed := time.Since(start)
		err = s.describe(ctx, att, "connect", err)
		release()
		if att != nil && att.cleanup != nil {
			att.cleanup()
		}
		return nil, att, nil, nil, elapsed, err
	}
	init := cs.InitializeResult()
	s.setLogLevel(ctx, cs, init) // see logs.go
	s.resubscribe(ctx, cs)       // see subscribe.go
	var tools []*mcp.Tool
	if init == nil || init.Capabilities == nil || init.Capabilities.Tools != nil {
		tools, err = s.listTools(ctx, cs)
		if err != nil {
			elapsed := time.Since(start)
			err = s.describe(ctx, att, "tools/list", err)
			att.kill()
			release()
			_ = cs.Close()
			if att.cleanup != nil {
				att.cleanup()
			}
			return nil, att, nil, nil, elapsed, err
		}
	}
	return cs, att, tools, init, time.Since(start), nil
}

// describe wraps a connection error with the server, what failed and a
// timeout's length.
func (s *server) describe(ctx context.Context, att *attempt, op string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("server %s: %s: no answer in time: %w", s.name, op, context.DeadlineExceeded)
	}
	if att != nil && att.cmd != nil && att.cmd.ProcessState != nil && att.cmd.ProcessState.Exited() {
		return fmt.Errorf("server %s: %s: process exited (%s): %w", s.name, op, att.cmd.ProcessState, err)
	}
	return fmt.Errorf("server %s: %s: %w", s.name, op, err)
}

// relistTools lists s's tools again and applies what changed; differed
// reports whether anything did.
func (s *server) relistTools(cs *mcp.ClientSession) (differed bool, err error) {
	h := s.h
	ctx, cancel := context.WithTimeout(h.life, s.connectTimeout())
	list, err := s.listTools(ctx, cs)
	cancel()
	if err != nil {
		return false, s.describe(ctx, nil, "tools/list", err)
	}
	ch := s.updateTools(list)
	applied := s.apply(ch) == nil
	s.storeCatalog()
	return applied && !ch.Empty(), nil
}

// listTools lists s's tools page by page, within the Hub's limits: a
// cursor seen before, or more pages than MaxToolPages, is an error at
// once; tools beyond MaxTools are not kept (updateTools names how many).
func (s *server) listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	h := s.h
	maxTools, maxPages := limit(h.opts.MaxTools, defaultMaxTools), limit(h.opts.MaxToolPages, defaultMaxToolPages)
	var out []*mcp.Tool
	over := 0
	seen := map[string]bool{}
	s.deep.take() // what an earlier listing left
	params := &mcp.ListToolsParams{}
	var ttl time.Duration // the shortest ttlMs of the pages
	listedAt := time.Now()
	for page := 1; ; page++ {
		if maxPages > 0 && page > maxPages {
			return nil, fmt.Errorf("more than %d pages of tools (HubOptions.MaxToolPages)", maxPages)
		}
		pctx, status := withHTTPStatus(ctx)
		res, err := cs.ListTools(pctx, params)
		if err != nil {
			return nil, status.explain("tools/list", err)
		}
		if d := time.Duration(res.TTLMs) * time.Millisecond; page == 1 || d < ttl {
			ttl = d
		}
		for _, t := range res.Tools {
			if maxTools > 0 && len(out) >= maxTools {
				over++
				continue
			}
			out = append(out, t)
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("page %d of tools/list repeats the cursor %q of an earlier page", page, truncate(res.NextCursor, 40))
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	deep := s.deep.take()
	h.mu.Lock()
	s.overTools, s.deepTools = over, deep
	s.listTTL, s.listedAt = max(ttl, 0), listedAt
	h.freshUntil.Store(0) // Freshen looks again
	h.mu.Unlock()
	return out, nil
}

// limit is a limit option's value: def when 0, none (0) when negative.
func limit(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (s *server) setClosed(first bool) {
	h := s.h
	h.mu.Lock()
	s.state = StateClosed
	s.session = nil
	h.mu.Unlock()
	if first {
		s.attempted()
	}
}

// setFailed marks a failed connection attempt. When consumers still have
// the server's tools (a lazy server, listed from the cache, that failed to
// start), it returns their removal.
func (s *server) setFailed(att *attempt, err error, elapsed time.Duration, giveUp bool) tool.Change {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	s.err = h.redact.Err(err)
	s.elapsed = elapsed
	if att != nil && att.stderr != nil {
		s.stderr = att.stderr
	}
	s.session = nil
	s.state = StateRestarting
	if giveUp {
		s.state = StateFailed
	}
	if s.removed || len(s.tools) == 0 {
		return tool.Change{Server: s.name}
	}
	s.removed = true
	return tool.Change{Server: s.name, Removed: slices.Sorted(maps.Keys(s.tools))}
}

// setDown marks a server whose session ended and returns the removal of its
// tools. Its routes stay, so that calls report the server, not an unknown
// tool.
func (s *server) setDown(err error, giveUp bool) tool.Change {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	s.err = h.redact.Err(err)
	s.session = nil
	s.state = StateRestarting
	if giveUp {
		s.state = StateFailed
	}
	s.removed = true
	if len(s.tools) > 0 {
		return tool.Change{Server: s.name, Removed: slices.Sorted(maps.Keys(s.tools))}
	}
	return tool.Change{Server: s.name}
}

func (s *server) setReady(cs *mcp.ClientSession, att *attempt, tools []*mcp.Tool, init *mcp.InitializeResult, elapsed time.Duration) tool.Change {
	h := s.h
	h.mu.Lock()
	if s.removed { // a restart, not the first connection
		s.restarts++
	}
	s.session = cs
	s.att = att
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
	return s.updateTools(tools)
}

// attempted tells whoever waits for the first connection attempt of s's
// supervisor (Connect, or the callers of a lazy server) that it is over.
func (s *server) attempted() {
	h := s.h
	h.mu.Lock()
	if s.lazy.wake != nil {
		close(s.lazy.wake)
		s.lazy.wake = nil
	}
	first := !s.lazy.readyClosed
	if first {
		close(s.ready)
		s.lazy.readyClosed = true
	}
	h.mu.Unlock()
	if first {
		h.reportProgress()
	}
}

// using counts a call to s in progress, so that s is not stopped as idle
// under it; the returned function ends it. h.mu is held.
func (s *server) using() func() {
	h := s.h
	s.lazy.calls++
	s.lazy.lastCall = time.Now()
	return func() {
		h.mu.Lock()
		s.lazy.calls--
		s.lazy.lastCall = time.Now()
		h.mu.Unlock()
	}
}

// start starts s if it is lazy and waits until its first connection
// attempt is over (or its announcement, when that is still under way). It
// reports whether it waited for a start. h.mu is held, and released while
// waiting.
func (s *server) start(ctx context.Context) (bool, error) {
	h := s.h
	started := false
	for {
		if h.closed {
			return started, ErrClosed
		}
		var wait <-chan struct{}
		switch {
		case s.state == StateLazy && !s.lazy.readyClosed:
			wait = s.ready
		case s.state == StateLazy:
			s.state = StateConnecting
			s.lazy.wake = make(chan struct{})
			wait = s.lazy.wake
			started = true
			h.opts.Logger.Info("upstream: starting lazy server", "server", s.name)
			h.wg.Add(1)
			go s.supervise()
		case s.state == StateConnecting && s.lazy.wake != nil:
			wait = s.lazy.wake
			started = true
		default:
			return started, nil
		}
		h.mu.Unlock()
		var err error
		select {
		case <-wait:
		case <-ctx.Done():
			err = ctx.Err()
		case <-h.life.Done():
			err = ErrClosed
		}
		h.mu.Lock()
		if err != nil {
			return started, err
		}
	}
}

// wake starts a lazy server for a call of the tool name and returns what
// Call needs to go on. The error says why the call cannot be made: the
// server failed to start, or no longer lists the tool.
func (s *server) wake(ctx context.Context, name string) (*mcp.ClientSession, string, State, error, error) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	started, err := s.start(ctx)
	switch {
	case errors.Is(err, ErrClosed):
		return nil, "", s.state, nil, fmt.Errorf("call %s: %w", name, ErrClosed)
	case err != nil:
		return nil, "", s.state, nil, fmt.Errorf("call %s (server %s): starting the server: %w", name, s.name, err)
	case started && s.state == StateFailed:
		return nil, "", s.state, nil, fmt.Errorf("%w: call %s: server %s failed to start: %w%s", errServerUnavailable, name, s.name, s.err, s.stderrNote())
	}
	orig, ok := s.originals[name]
	if s.state == StateReady && (!ok || h.routes[name] != s) {
		return nil, "", s.state, nil, fmt.Errorf("%w: %q: server %s no longer lists it", errUnknownTool, name, s.name)
	}
	return s.session, orig, s.state, s.err, nil
}

// stderrNote quotes the last lines of a server's stderr for an error.
func (s *server) stderrNote() string {
	if s.stderr == nil {
		return ""
	}
	tail := s.stderr.String()
	if tail == "" {
		return ""
	}
	const max = 400
	if len(tail) > max {
		tail = tail[len(tail)-max:]
		if i := strings.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
	}
	return fmt.Sprintf(" (stderr: %q)", tail)
}

// idleTimer returns the timer that stops s when it has not been called for
// IdleTimeout, or nil when idle servers keep running.
func (s *server) idleTimer() *time.Timer {
	h := s.h
	if h.opts.Start != StartLazy || h.opts.IdleTimeout < 0 {
		return nil
	}
	h.mu.Lock()
	s.lazy.lastCall = time.Now()
	h.mu.Unlock()
	return time.NewTimer(h.opts.IdleTimeout)
}

func idleC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// goIdle makes s lazy again, keeping its tools, when it has not been
// called for IdleTimeout and no call is in progress; the caller then stops
// its session. Otherwise it sets t for the next check.
func (s *server) goIdle(t *time.Timer) bool {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.lazy.calls > 0 {
		t.Reset(h.opts.IdleTimeout)
		return false
	}
	if left := h.opts.IdleTimeout - time.Since(s.lazy.lastCall); left > 0 {
		t.Reset(left)
		return false
	}
	h.opts.Logger.Info("upstream: stopping idle server", "server", s.name, "idle", h.opts.IdleTimeout)
	s.state = StateLazy
	s.session = nil
	return true
}

// relistAsk asks a server's supervisor to list its tools again; done
// gets the outcome once the change is applied.
type relistAsk struct {
	done chan error
	// said: as if the server had sent notifications/tools/list_changed
	// (Refresh), so HubOptions.OnListChange hears it (ListChange.Tools),
	// whether or not the list changed. Freshen and ReloadTrust list again
	// on the Hub's own account, and only a change is told.
	said bool
}

// askRelist asks s's supervisor to list its tools again (said: see
// relistAsk) and returns where the outcome comes once the change is
// applied; nil when s is no longer ready when tick ticks (its restart
// lists anew). err is the end of ctx or of the Hub.
func (s *server) askRelist(ctx context.Context, said bool, tick <-chan time.Time) (chan error, error) {
	h := s.h
	done := make(chan error, 1)
	for {
		select {
		case s.refresh <- relistAsk{done: done, said: said}:
			return done, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("upstream: refresh: %w", ctx.Err())
		case <-h.life.Done():
			return nil, ErrClosed
		case <-tick:
			h.mu.Lock()
			up := s.state == StateReady
			h.mu.Unlock()
			if !up {
				return nil, nil
			}
		}
	}
}

// monoBase is the origin of mono: times on the monotonic clock, as int64
// nanoseconds, for an atomic (Hub.freshUntil).
var monoBase = time.Now()

// mono is t on the monotonic clock, in nanoseconds since monoBase.
func mono(t time.Time) int64 { return int64(t.Sub(monoBase)) }

// monoNow is mono(time.Now()).
func monoNow() int64 { return int64(time.Since(monoBase)) }
