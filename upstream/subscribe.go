package upstream

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subscribe asks the server that offers the resource uri (routed as
// ReadResource routes it) to tell of its updates (resources/subscribe);
// HubOptions.OnResourceUpdated hears them. Subscriptions are counted, for
// a proxy whose clients subscribe to the same resource: the server is
// asked on the first, and Unsubscribe asks it to stop on the last. Errors
// are those of ReadResource; a server that does not offer subscriptions
// answers with a JSON-RPC error (an *RPCError), and the subscription is
// not counted.
//
// A server that restarts forgets its subscriptions: the Hub sends them
// again when it is back.
func (h *Hub) Subscribe(ctx context.Context, uri string) error {
	return h.subscription(ctx, uri, true)
}

// Unsubscribe ends a subscription Subscribe made; see Subscribe. An
// unsubscribe of a resource with no subscription is an error wrapping
// ErrUnknownResource.
func (h *Hub) Unsubscribe(ctx context.Context, uri string) error {
	return h.subscription(ctx, uri, false)
}

func (h *Hub) subscription(ctx context.Context, uri string, on bool) error {
	p := &h.pt
	p.subMu.Lock() // one change of a URI's count, and its request, at a time (p.subs itself is under p.mu)
	defer p.subMu.Unlock()
	p.mu.Lock()
	var n int
	// Another caller's subscription to a server out of this one's scope
	// (scope.go) is none of this one's: not counted, not ended by it.
	if sub := p.subs[uri]; sub != nil && inScope(ctx)(sub.server.name) {
		n = sub.n
		switch {
		case on:
			sub.n++
		case n > 1:
			sub.n--
		}
	}
	p.mu.Unlock()
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
		s, orig, err = h.resourceServer(uri, inScope(ctx))
		h.mu.Unlock()
		if err != nil {
			return h.redact.Err(err)
		}
	} else {
		p.mu.Lock()
		s, orig = p.subs[uri].server, p.subs[uri].orig
		p.mu.Unlock()
	}
	op := "subscribe to " + uri
	if !on {
		op = "unsubscribe from " + uri
	}
	_, err = h.request(ctx, s, op, uri, noProgressToken{}, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		if on {
			return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: orig})
		}
		return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: orig})
	})
	if err != nil {
		return h.redact.Err(err)
	}
	p.mu.Lock()
	if p.subs == nil {
		p.subs = map[string]*subscription{}
	}
	if on {
		p.subs[uri] = &subscription{n: 1, server: s, orig: orig}
	} else {
		delete(p.subs, uri)
	}
	p.mu.Unlock()
	return nil
}

// subscription is how many Subscribe calls a URI has, the server they
// went to and the URI as that server knows it (uri itself, or what a
// namespaced toolsift:SERVER/URI names: resources.go).
type subscription struct {
	n      int
	server *server
	orig   string
}

// resubscribe sends s, connected anew, the subscriptions it had: a server
// that restarts forgets them. A refusal is logged. (Not under subMu: a
// Subscribe that starts a lazy server holds it while s connects.)
func (h *Hub) resubscribe(ctx context.Context, s *server, cs *mcp.ClientSession) {
	var uris []string
	h.pt.mu.Lock()
	for _, sub := range h.pt.subs {
		if sub.server == s {
			uris = append(uris, sub.orig)
		}
	}
	h.pt.mu.Unlock()
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			h.opts.Logger.Info("upstream: subscribing again after a restart", "server", s.name, "uri", uri, "error", h.redact.Err(err))
		}
	}
}

// onResourceUpdated passes a server's notifications/resources/updated on.
func (h *Hub) onResourceUpdated(s *server, uri string) {
	if h.opts.OnResourceUpdated == nil {
		return
	}
	h.opts.Logger.Debug("upstream: resource updated", "server", s.name, "uri", uri)
	// Told under the URIs its subscribers used: an update of a resource
	// another server lists too reaches only those who subscribed to s's.
	var uris []string
	h.pt.mu.Lock()
	for key, sub := range h.pt.subs {
		if sub.server == s && sub.orig == uri {
			uris = append(uris, key)
		}
	}
	h.pt.mu.Unlock()
	for _, u := range uris {
		h.opts.OnResourceUpdated(u)
	}
}
