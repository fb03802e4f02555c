package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	if sub := p.subs[uri]; sub != nil {
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
	h.mu.Lock()
	s := h.resourceServer(uri)
	h.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%w: %q: no server lists it, links it or has a template that matches it", ErrUnknownResource, uri)
	}
	op := "subscribe to " + uri
	if !on {
		op = "unsubscribe from " + uri
	}
	_, err := h.request(ctx, s, op, uri, noProgressToken{}, func(ctx context.Context, cs *sdk.ClientSession) (any, error) {
		if on {
			return struct{}{}, cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})
		}
		return struct{}{}, cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		return h.redact.Err(err)
	}
	p.mu.Lock()
	if p.subs == nil {
		p.subs = map[string]*subscription{}
	}
	if on {
		p.subs[uri] = &subscription{n: 1, server: s}
	} else {
		delete(p.subs, uri)
	}
	p.mu.Unlock()
	return nil
}

// subscription is how many Subscribe calls a URI has, and the server they
// went to.
type subscription struct {
	n      int
	server *server
}

// resubscribe sends s, connected anew, the subscriptions it had: a server
// that restarts forgets them. A refusal is logged. (Not under subMu: a
// Subscribe that starts a lazy server holds it while s connects.)
func (h *Hub) resubscribe(ctx context.Context, s *server, cs *sdk.ClientSession) {
	var uris []string
	h.pt.mu.Lock()
	for uri, sub := range h.pt.subs {
		if sub.server == s {
			uris = append(uris, uri)
		}
	}
	h.pt.mu.Unlock()
	for _, uri := range uris {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			h.opts.Logger.Info("mcp: subscribing again after a restart", "server", s.name, "uri", uri, "error", h.redact.Err(err))
		}
	}
}

// onResourceUpdated passes a server's notifications/resources/updated on.
func (h *Hub) onResourceUpdated(s *server, uri string) {
	if h.opts.OnResourceUpdated == nil {
		return
	}
	h.opts.Logger.Debug("mcp: resource updated", "server", s.name, "uri", uri)
	h.opts.OnResourceUpdated(uri)
}
