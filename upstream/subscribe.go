package upstream

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscriptions are a Passthrough's resource subscriptions: how many
// Subscribe calls each URI has at each server they went to.
type subscriptions struct {
	change sync.Mutex // one change of a URI's count, and its request, at a time

	mu    sync.Mutex                 // byURI itself
	byURI map[string][]*subscription // resource URI → its subscriptions, one per server
}

// subscription is how many Subscribe calls a URI has at one server, and
// the URI as that server knows it (uri itself, or what a namespaced
// toolsift:SERVER/URI names: resources.go). Callers of different scopes
// may subscribe to the same URI at different servers (each listing it,
// each caller seeing one): each server's subscription is its own.
type subscription struct {
	n      int
	server *server
	orig   string
}

func (p *Passthrough) subscription(ctx context.Context, uri string, on bool) error {
	h, subs := p.h, &p.subs
	subs.change.Lock()
	defer subs.change.Unlock()
	in := inScope(ctx)
	subs.mu.Lock()
	var mine *subscription
	// Another caller's subscription to a server out of this one's scope
	// (scope.go) is none of this one's: not counted, not ended by it.
	for _, sub := range subs.byURI[uri] {
		if in(sub.server.name) {
			mine = sub
			break
		}
	}
	n := 0
	if mine != nil {
		n = mine.n
		switch {
		case on:
			mine.n++
		case n > 1:
			mine.n--
		}
	}
	subs.mu.Unlock()
	switch {
	case on && n > 0, !on && n > 1:
		return nil
	case !on && n == 0:
		return fmt.Errorf("%w: %q: not subscribed", ErrUnknownResource, uri)
	}
	var (
		s    *server
		orig = uri // the URI as s knows it
		err  error
	)
	if on {
		h.mu.Lock()
		s, orig, err = p.resourceServer(uri, in)
		h.mu.Unlock()
		if err != nil {
			return h.redact.Err(err)
		}
	} else {
		s, orig = mine.server, mine.orig
	}
	op := "subscribe to " + uri
	if !on {
		op = "unsubscribe from " + uri
	}
	_, err = s.request(ctx, op, uri, noProgressToken{}, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		if on {
			return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: orig})
		}
		return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: orig})
	})
	if err != nil {
		return h.redact.Err(err)
	}
	subs.mu.Lock()
	if subs.byURI == nil {
		subs.byURI = map[string][]*subscription{}
	}
	if on {
		subs.byURI[uri] = append(subs.byURI[uri], &subscription{n: 1, server: s, orig: orig})
	} else {
		rest := slices.DeleteFunc(subs.byURI[uri], func(sub *subscription) bool { return sub == mine })
		if len(rest) == 0 {
			delete(subs.byURI, uri)
		} else {
			subs.byURI[uri] = rest
		}
	}
	subs.mu.Unlock()
	return nil
}

// resubscribe sends s, connected anew as cs, the subscriptions it had: a
// server that restarts forgets them. A refusal is logged. (Not under
// subscriptions.change: a Subscribe that starts a lazy server holds it
// while s connects.)
func (s *server) resubscribe(ctx context.Context, cs *mcp.ClientSession) {
	subs := &s.h.pt.subs
	var uris []string
	subs.mu.Lock()
	for _, list := range subs.byURI {
		for _, sub := range list {
			if sub.server == s {
				uris = append(uris, sub.orig)
			}
		}
	}
	subs.mu.Unlock()
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			s.h.opts.Logger.Info("upstream: subscribing again after a restart", "server", s.name, "uri", uri, "error", s.h.redact.Err(err))
		}
	}
}

// resourceUpdated passes s's notifications/resources/updated on.
func (s *server) resourceUpdated(uri string) {
	h := s.h
	if h.opts.OnResourceUpdated == nil {
		return
	}
	h.opts.Logger.Debug("upstream: resource updated", "server", s.name, "uri", uri)
	// Told under the URIs its subscribers used: an update of a resource
	// another server lists too reaches only those who subscribed to s's.
	subs := &h.pt.subs
	var uris []string
	subs.mu.Lock()
	for key, list := range subs.byURI {
		for _, sub := range list {
			if sub.server == s && sub.orig == uri {
				uris = append(uris, key)
			}
		}
	}
	subs.mu.Unlock()
	for _, u := range uris {
		h.opts.OnResourceUpdated(s.name, u)
	}
}
