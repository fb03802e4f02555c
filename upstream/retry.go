package upstream

import (
	"context"
	"fmt"
)

// Retry starts again the server named name if it failed (its first
// connection, or its restarts ran out) and waits until that connection
// attempt is over: nil when the server is ready (its tools reach OnChange
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
