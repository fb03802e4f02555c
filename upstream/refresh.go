package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Refresh lists the tools of every ready server again, as if each had sent
// notifications/tools/list_changed, and returns when every change has been
// applied (HubOptions.OnChange has returned) or ctx ends. Lazy servers are
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
	for _, name := range h.order {
		switch s := h.servers[name]; s.state {
		case StateReady:
			ready = append(ready, s)
		case StateLazy:
			lazy = append(lazy, s)
		}
	}
	h.mu.Unlock()
	started := h.startAll(ctx, lazy)
	errs, err := h.relist(ctx, ready, true)
	if err != nil {
		return err
	}
	errs = append([]error{<-started}, errs...)
	return h.redact.Err(errors.Join(errs...))
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

// relist asks the supervisors of ready servers to list their tools again
// (said: see relistAsk) and waits until each change is applied; errs are
// the servers' failures, err the end of ctx or of the Hub.
func (h *Hub) relist(ctx context.Context, ready []*server, said bool) (errs []error, err error) {
	// A supervisor takes the request between two events of its session;
	// one whose session ended meanwhile never will, so look again now and
	// then.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	answers := make([]chan error, len(ready))
	for i, s := range ready {
		answers[i] = make(chan error, 1)
	send:
		for {
			select {
			case s.refresh <- relistAsk{done: answers[i], said: said}:
				break send
			case <-ctx.Done():
				return nil, fmt.Errorf("upstream: refresh: %w", ctx.Err())
			case <-h.life.Done():
				return nil, ErrClosed
			case <-tick.C:
				h.mu.Lock()
				up := s.state == StateReady
				h.mu.Unlock()
				if !up {
					answers[i] = nil // went down: its restart lists anew
					break send
				}
			}
		}
	}
	for _, a := range answers {
		if a == nil {
			continue
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
