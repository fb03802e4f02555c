package upstream

import (
	"context"
	"errors"
	"math"
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
	if monoNow() < h.freshUntil.Load() {
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
	for _, name := range h.order {
		s := h.servers[name]
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
		// Under h.mu, which a listing (server.tools) holds to reset it.
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

// monoBase is the origin of mono: times on the monotonic clock, as int64
// nanoseconds, for an atomic.
var monoBase = time.Now()

// mono is t on the monotonic clock, in nanoseconds since monoBase.
func mono(t time.Time) int64 { return int64(t.Sub(monoBase)) }

// monoNow is mono(time.Now()).
func monoNow() int64 { return int64(time.Since(monoBase)) }
