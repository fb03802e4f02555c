package upstream

import (
	"context"
	"strings"
)

// pending reports whether s is connecting for the first time with no
// tools listed: started by Connect (its cache had no list of its tools),
// its first connection attempt not over, that is until its tools are
// applied (or it failed): its state is ready before they are. A lazy
// server starting for a call is not: its tools are listed. h.mu is held.
func (s *server) pending() bool {
	return s.h.started[s] && !s.lazy.readyClosed
}

// Unlisted returns the names of the servers whose tools are not listed
// because they are still connecting for the first time (the servers a
// Background Connect did not wait for: their cache had no list of their
// tools), and of those that failed (Status says why), each sorted. A lazy
// server listed from the cache is not connecting, even while a call
// starts it; nor is one restarting. The connecting servers' tools will
// be in Tools, and applied to the change sink, once each has listed
// them. Servers out of ctx's scope (WithServerScope) are left out.
func (h *Hub) Unlisted(ctx context.Context) (connecting, failed []string) {
	in := inScope(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.order {
		switch {
		case !in(s.name):
		case s.pending():
			connecting = append(connecting, s.name)
		case s.state == StateFailed:
			failed = append(failed, s.name)
		}
	}
	return connecting, failed
}

// WaitListed waits until each server connecting (see Unlisted) that names
// stands for (every one, when names is empty), in ctx's scope, has listed its tools, and its change
// sink has returned (see Connect), or failed; or until ctx ends or the
// Hub is closed. A name stands for a server when it is the server's name
// or a qualified tool name of it (QualifiedName: its server's part
// before the first "__"), so that a caller who has a tool's name can wait
// for the server that will list it. It returns the names of the servers
// waited for that are still connecting, sorted: nil when none is. It
// returns at once when no server is connecting: a Hub whose servers were
// all listed from the cache (or a Connect that was not Background) waits
// for nothing.
func (h *Hub) WaitListed(ctx context.Context, names ...string) []string {
	type waiting struct {
		name  string
		ready <-chan struct{}
	}
	var wait []waiting
	in := inScope(ctx)
	h.mu.Lock()
	for _, s := range h.order {
		if s.pending() && in(s.name) && standsFor(s.name, names) {
			wait = append(wait, waiting{s.name, s.ready})
		}
	}
	h.mu.Unlock()
	for i, w := range wait {
		select {
		case <-w.ready:
		case <-ctx.Done():
		case <-h.life.Done():
		}
		if ctx.Err() != nil || h.life.Err() != nil {
			var out []string
			for _, w := range wait[i:] {
				select {
				case <-w.ready:
				default:
					out = append(out, w.name)
				}
			}
			return out
		}
	}
	return nil
}

// standsFor reports whether one of names stands for the server (see
// WaitListed); every name does when there are none.
func standsFor(server string, names []string) bool {
	if len(names) == 0 {
		return true
	}
	prefix := serverPrefix(server) + "__"
	for _, n := range names {
		if n == server || strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}
