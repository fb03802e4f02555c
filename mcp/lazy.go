package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

// StartMode says when a Hub starts its servers.
type StartMode int

const (
	// StartLazy, the default, starts at Connect only the servers whose tool
	// list is not in the cache; the others are StateLazy until a call
	// needs them, and go back to it after HubOptions.IdleTimeout.
	StartLazy StartMode = iota
	// StartEager starts every server at Connect and keeps it running. The
	// cache is still written, so that a later lazy Hub can use it.
	StartEager
)

const defaultIdleTimeout = 5 * time.Minute

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

// restFromCache makes s lazy with the tools of its cache entry e, unless e
// is nil or a cached name is taken by another server. h.mu is held.
func (h *Hub) restFromCache(s *server, e *catalogEntry) bool {
	if e == nil {
		return false
	}
	tools := map[string]tool.Tool{}
	originals := map[string]string{}
	for _, t := range e.Tools {
		if owner, ok := h.routes[t.Name]; ok && owner != s {
			return false
		}
		tools[t.Name] = t
		originals[t.Name] = t.OriginalName
	}
	for q := range e.Disabled {
		if owner, ok := h.routes[q]; ok && owner != s {
			return false
		}
	}
	s.tools, s.originals, s.disabled = tools, originals, maps.Clone(e.Disabled)
	if s.disabled == nil {
		s.disabled = map[string]string{}
	}
	for q := range s.tools {
		h.routes[q] = s
	}
	for q := range s.disabled {
		h.routes[q] = s
	}
	s.version = e.ProtocolVersion
	s.info = &sdk.Implementation{Name: e.ServerName, Version: e.ServerVersion}
	s.feat.restore(s.name, e.Features)
	s.lazy.cachedAt = e.Created
	s.lazy.fromCache = true
	s.state = StateLazy
	return true
}

// announce applies the cached tools of the lazy servers through OnChange,
// then lets Connect (and their first callers) go on. Until then a call
// waits, so that a server's start cannot overtake its announcement.
func (h *Hub) announce(lazy []*server) {
	if len(lazy) == 0 {
		return
	}
	changes := make([]tool.Change, len(lazy))
	for i, s := range lazy {
		changes[i] = tool.Change{Server: s.name}
		for _, q := range slices.Sorted(maps.Keys(s.tools)) {
			changes[i].Added = append(changes[i].Added, s.tools[q])
		}
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for i, s := range lazy {
			h.apply(s, changes[i])
			h.attempted(s)
		}
	}()
}

// attempted tells whoever waits for the first connection attempt of s's
// supervisor (Connect, or the callers of a lazy server) that it is over.
func (h *Hub) attempted(s *server) {
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
func (h *Hub) using(s *server) func() {
	s.lazy.calls++
	s.lazy.lastCall = time.Now()
	return func() {
		h.mu.Lock()
		s.lazy.calls--
		s.lazy.lastCall = time.Now()
		h.mu.Unlock()
	}
}

// startServer starts s if it is lazy and waits until its first connection
// attempt is over (or its announcement, when that is still under way). It
// reports whether it waited for a start. h.mu is held, and released while
// waiting.
func (h *Hub) startServer(ctx context.Context, s *server) (bool, error) {
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
			h.opts.Logger.Info("mcp: starting lazy server", "server", s.name)
			h.wg.Add(1)
			go h.supervise(s)
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
func (h *Hub) wake(ctx context.Context, s *server, name string) (*sdk.ClientSession, string, State, error, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	started, err := h.startServer(ctx, s)
	switch {
	case errors.Is(err, ErrClosed):
		return nil, "", s.state, nil, fmt.Errorf("call %s: %w", name, ErrClosed)
	case err != nil:
		return nil, "", s.state, nil, fmt.Errorf("call %s (server %s): starting the server: %w", name, s.name, err)
	case started && s.state == StateFailed:
		return nil, "", s.state, nil, fmt.Errorf("%w: call %s: server %s failed to start: %w%s", ErrServerUnavailable, name, s.name, s.err, stderrNote(s))
	}
	orig, ok := s.originals[name]
	if s.state == StateReady && (!ok || h.routes[name] != s) {
		return nil, "", s.state, nil, fmt.Errorf("%w: %q: server %s no longer lists it", ErrUnknownTool, name, s.name)
	}
	return s.session, orig, s.state, s.err, nil
}

// stderrNote quotes the last lines of a server's stderr for an error.
func stderrNote(s *server) string {
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

// startAll starts the lazy servers at once and sends the join of their
// start failures when each is up or failed.
func (h *Hub) startAll(ctx context.Context, lazy []*server) <-chan error {
	out := make(chan error, 1)
	errs := make([]error, len(lazy))
	var wg sync.WaitGroup
	for i, s := range lazy {
		wg.Go(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			started, err := h.startServer(ctx, s)
			if err == nil && started && s.state == StateFailed {
				err = s.err
			}
			if err != nil {
				errs[i] = fmt.Errorf("server %s: start: %w", s.name, err)
			}
		})
	}
	go func() {
		wg.Wait()
		out <- errors.Join(errs...)
	}()
	return out
}

// idleTimer returns the timer that stops s when it has not been called for
// IdleTimeout, or nil when idle servers keep running.
func (h *Hub) idleTimer(s *server) *time.Timer {
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
func (h *Hub) goIdle(s *server, t *time.Timer) bool {
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
	h.opts.Logger.Info("mcp: stopping idle server", "server", s.name, "idle", h.opts.IdleTimeout)
	s.state = StateLazy
	s.session = nil
	return true
}

// closeLazy marks the servers that were never started as closed.
func (h *Hub) closeLazy() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.servers {
		if s.state == StateLazy {
			s.state = StateClosed
		}
	}
}
