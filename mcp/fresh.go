package mcp

import (
	"context"
	"errors"
	"time"
)

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
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	var stale []*server
	now := time.Now()
	for _, name := range h.order {
		s := h.servers[name]
		if s.state == StateReady && s.listTTL > 0 && now.Sub(s.listedAt) >= s.listTTL {
			stale = append(stale, s)
		}
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
