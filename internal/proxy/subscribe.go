package proxy

import (
	"context"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource subscriptions are forwarded: a client's resources/subscribe and
// resources/unsubscribe go to the upstream server of the URI through the
// Hub (which counts them across clients, so the upstream is asked once),
// and an upstream's notifications/resources/updated reaches the sessions
// that subscribed to that URI (the SDK keeps each session's subscriptions).
// A session that ends without unsubscribing leaves its count behind: the
// upstream keeps sending updates, which reach no one.

// subscribe answers resources/subscribe.
func (s *session) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	start := time.Now()
	err := s.p.ts.Hub().Subscribe(withSession(ctx, req.Session), req.Params.URI)
	s.p.logger(req.Session).Info("subscribe", "uri", req.Params.URI, "duration", time.Since(start), "error", err)
	return err
}

// unsubscribe answers resources/unsubscribe.
func (s *session) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) error {
	start := time.Now()
	err := s.p.ts.Hub().Unsubscribe(withSession(ctx, req.Session), req.Params.URI)
	s.p.logger(req.Session).Info("unsubscribe", "uri", req.Params.URI, "duration", time.Since(start), "error", err)
	return err
}

// ResourceUpdated tells the sessions subscribed to uri that it changed
// (notifications/resources/updated). Give it to
// mcp.HubOptions.OnResourceUpdated.
func (p *Proxy) ResourceUpdated(uri string) {
	for _, s := range p.liveSessions() {
		if err := s.srv.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			p.log.Debug("resource updated: not passed on", "uri", uri, "error", err)
		}
	}
}
