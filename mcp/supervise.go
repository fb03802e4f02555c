package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/tool"
)

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
			h.apply(s, h.setFailed(s, att, err, elapsed, giveUp))
			if first {
				h.attempted(s)
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
		h.apply(s, h.setReady(s, cs, att, tools, info, elapsed))
		h.storeCatalog(s)
		if first {
			h.attempted(s)
			first = false
		}
		idle := h.idleTimer(s)

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
				h.setClosed(s, false)
				return
			case <-s.relist:
				if err := h.relist(s, cs); err != nil {
					h.opts.Logger.Warn("mcp: re-listing tools failed", "server", s.name, "error", err)
				}
			case done := <-s.refresh:
				done <- h.relist(s, cs)
			case err := <-ended:
				why = err
				break serve
			case <-idleC(idle):
				if h.goIdle(s, idle) {
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
			h.setClosed(s, false)
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
		h.apply(s, h.setDown(s, fmt.Errorf("server %s: connection lost: %w", s.name, why), giveUp))
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
// The start slot is given back before a failed attempt is cleaned up, and
// the time reported is the attempt's, not the cleanup's.
func (h *Hub) connectAndList(s *server) (*sdk.ClientSession, *attempt, []*sdk.Tool, *sdk.InitializeResult, time.Duration, error) {
	select {
	case h.slots <- struct{}{}:
	case <-h.life.Done():
		return nil, nil, nil, nil, 0, ErrClosed
	}
	release := sync.OnceFunc(func() { <-h.slots })
	defer release()
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
		elapsed := time.Since(start)
		err = describe(ctx, s, att, "connect", err)
		release()
		if att != nil && att.cleanup != nil {
			att.cleanup()
		}
		return nil, att, nil, nil, elapsed, err
	}
	init := cs.InitializeResult()
	var tools []*sdk.Tool
	if init == nil || init.Capabilities == nil || init.Capabilities.Tools != nil {
		tools, err = listTools(ctx, cs)
		if err != nil {
			elapsed := time.Since(start)
			err = describe(ctx, s, att, "tools/list", err)
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
func describe(ctx context.Context, s *server, att *attempt, op string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("server %s: %s: no answer in time: %w", s.name, op, context.DeadlineExceeded)
	}
	if att != nil && att.cmd != nil && att.cmd.ProcessState != nil && att.cmd.ProcessState.Exited() {
		return fmt.Errorf("server %s: %s: process exited (%s): %w", s.name, op, att.cmd.ProcessState, err)
	}
	return fmt.Errorf("server %s: %s: %w", s.name, op, err)
}

// relist lists s's tools again and applies what changed.
func (h *Hub) relist(s *server, cs *sdk.ClientSession) error {
	ctx, cancel := context.WithTimeout(h.life, h.connectTimeout(s))
	list, err := listTools(ctx, cs)
	cancel()
	if err != nil {
		return describe(ctx, s, nil, "tools/list", err)
	}
	h.apply(s, h.updateTools(s, list))
	h.storeCatalog(s)
	return nil
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
		h.attempted(s)
	}
}

// setFailed marks a failed connection attempt. When consumers still have
// the server's tools (a lazy server, listed from the cache, that failed to
// start), it returns their removal.
func (h *Hub) setFailed(s *server, att *attempt, err error, elapsed time.Duration, giveUp bool) tool.Change {
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
func (h *Hub) setDown(s *server, err error, giveUp bool) tool.Change {
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

func (h *Hub) setReady(s *server, cs *sdk.ClientSession, att *attempt, tools []*sdk.Tool, init *sdk.InitializeResult, elapsed time.Duration) tool.Change {
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
	return h.updateTools(s, tools)
}
