package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource subscriptions are forwarded: a client's resources/subscribe and
// resources/unsubscribe go to the upstream server of the URI through the
// Hub (which counts them across clients, so the upstream is asked once),
// and an upstream's notifications/resources/updated reaches the sessions
// that subscribed to that URI (the SDK keeps each session's subscriptions).
// A client session that ends without unsubscribing is unsubscribed then,
// except on a static session (stateless HTTP), where a session lasts one
// request and a subscription outlives it until the client unsubscribes.

// clientSubs are the subscriptions a session's clients made, to end
// those left when a client session ends.
type clientSubs struct {
	mu  sync.Mutex
	uri map[*mcp.ServerSession]map[string]int
}

// subscribe answers resources/subscribe.
func (s *session) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	start := time.Now()
	pt := s.p.hub.Passthrough()
	if srv := s.p.perUser.featureServer(pt, "", req.Params.URI); srv != "" {
		return errPerUserFeature(srv)
	}
	err := pt.Subscribe(withSession(ctx, req.Session), req.Params.URI)
	s.p.logger(ctx, req.Session).Info("subscribe", "uri", req.Params.URI, "duration", time.Since(start), "error", err)
	if err == nil && req.Session != nil && !s.static {
		s.subs.mu.Lock()
		if s.subs.uri == nil {
			s.subs.uri = map[*mcp.ServerSession]map[string]int{}
		}
		mine := s.subs.uri[req.Session]
		if mine == nil {
			mine = map[string]int{}
			s.subs.uri[req.Session] = mine
			go s.unsubscribeWhenDone(req.Session)
		}
		mine[req.Params.URI]++
		s.subs.mu.Unlock()
	}
	return err
}

// unsubscribe answers resources/unsubscribe.
func (s *session) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	start := time.Now()
	err := s.p.hub.Passthrough().Unsubscribe(withSession(ctx, req.Session), req.Params.URI)
	s.p.logger(ctx, req.Session).Info("unsubscribe", "uri", req.Params.URI, "duration", time.Since(start), "error", err)
	if err == nil {
		s.subs.mu.Lock()
		if mine := s.subs.uri[req.Session]; mine[req.Params.URI] > 0 {
			mine[req.Params.URI]--
		}
		s.subs.mu.Unlock()
	}
	return err
}

// unsubscribeWhenDone ends the subscriptions ss left when it ends.
func (s *session) unsubscribeWhenDone(ss *mcp.ServerSession) {
	_ = ss.Wait()
	s.subs.mu.Lock()
	mine := s.subs.uri[ss]
	delete(s.subs.uri, ss)
	s.subs.mu.Unlock()
	for uri, n := range mine {
		for range n {
			if err := s.p.hub.Passthrough().Unsubscribe(context.Background(), uri); err != nil {
				s.p.log.Debug("unsubscribing a session that ended", "uri", uri, "error", err)
			}
		}
	}
}

// resourceUpdated tells the sessions subscribed to uri that it changed
// (notifications/resources/updated). Open gives it to
// upstream.HubOptions.OnResourceUpdated.
func (p *proxy) resourceUpdated(uri string) {
	for _, s := range p.liveSessions() {
		if err := s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			p.log.Debug("resource updated: not passed on", "uri", uri, "error", err)
		}
	}
}
