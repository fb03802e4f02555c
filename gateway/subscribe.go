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
//
// Under a policy a subscription is held to its caller's scope on both
// wires: resources/subscribe, and the resourceSubscriptions of a
// 2026-07-28 subscriptions/listen stream, which the SDK subscribes with
// this server's handler (scoped routes both in scope: a resource of a
// server out of it is answered as one no server lists). An update reaches
// a session or a listen stream only from a server of its caller's scope
// as the policy is when it arrives (resourceUpdated, quiet), so a policy
// changed under a live subscription stops the updates of what left the
// scope.

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

// unsubscribe answers resources/unsubscribe, and ends the subscriptions
// of a subscriptions/listen stream that ended.
func (s *session) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	start := time.Now()
	// A listen stream unsubscribes as it ends, with its ended ctx: the
	// upstream is told all the same (the ctx's values, its scope among
	// them, are kept).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeTimeout)
	defer cancel()
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

// unsubscribeTimeout bounds the upstream's unsubscription of a client
// that left.
const unsubscribeTimeout = 10 * time.Second

// resourceUpdated tells the sessions subscribed to uri at server that it
// changed (notifications/resources/updated), each only when server is in
// its caller's scope: a session of one caller is skipped here, the
// shared server's listen streams are held to theirs by quiet. Open gives
// it to upstream.HubOptions.OnResourceUpdated.
func (p *proxy) resourceUpdated(server, uri string) {
	for _, s := range p.liveSessions() {
		if s.id != nil && !p.accessOf(*s.id).resources(server) {
			continue
		}
		s.updating.Lock()
		s.from = server
		err := s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		s.from = ""
		s.updating.Unlock()
		if err != nil {
			p.log.Debug("resource updated: not passed on", "uri", uri, "error", err)
		}
	}
}

// heldUpdate reports whether an update the shared server is sending
// (resourceUpdated, whose server it is) must be dropped for the listen
// stream ss: its caller's scope does not hold that server, or, under a
// policy, the stream's caller is not known. Called by quiet, within the
// server's ResourceUpdated.
func (s *session) heldUpdate(ss *mcp.ServerSession) bool {
	if s.p.policy.Load() == nil {
		return false
	}
	s.listen.mu.Lock()
	l := s.listen.m[ss]
	s.listen.mu.Unlock()
	return l == nil || !s.p.accessOf(l.id).resources(s.from)
}
