package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// TestResourceUpdatesReachSubscribers: a client's resources/subscribe
// reaches the upstream server, whose notifications/resources/updated then
// reach that client and not a client that did not subscribe; after
// resources/unsubscribe the upstream is told too.
// watchProxy is a proxy (with opts) over one upstream server that lists
// the resource watch://a and reports the subscriptions it is asked for on
// asked.
func watchProxy(t *testing.T, opts *gateway.ProxyOptions) (p *gateway.Proxy, up *mcp.Server, asked chan string) {
	asked = make(chan string, 4)
	up = mcp.NewServer(&mcp.Implementation{Name: "watch", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			asked <- "subscribe " + req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			asked <- "unsubscribe " + req.Params.URI
			return nil
		},
	})
	up.AddTool(&mcp.Tool{Name: "t", Description: "A tool.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	up.AddResource(&mcp.Resource{Name: "a", URI: "watch://a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "watch://a", Text: "a"}}}, nil
	})
	ts, hub := openHubToolset(t, &config.Config{Servers: map[string]config.Server{"watch": dialed(up)}}, upstream.HubOptions{
		OnResourceUpdated: func(server, uri string) { p.ResourceUpdated(server, uri) },
	}, toolsift.Options{NoSemantic: true})
	var err error
	if p, err = gateway.NewProxy(ts, hub, opts); err != nil {
		t.Fatal(err)
	}

	return p, up, asked
}

func TestResourceUpdatesReachSubscribers(t *testing.T) {
	p, up, asked := watchProxy(t, nil)

	updates := func() (*mcp.ClientSession, chan string) {
		got := make(chan string, 4)
		st, ct := mcp.NewInMemoryTransports()
		if _, err := p.NewServer().Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { got <- req.Params.URI },
		})
		cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
			t.Errorf("capabilities %+v declare no resource subscriptions", caps.Resources)
		}
		return cs, got
	}
	subscriber, subscriberGot := updates()
	_, otherGot := updates()
	ctx := context.Background()
	if err := subscriber.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://a"}); err != nil {
		t.Fatal(err)
	}
	if got := <-asked; got != "subscribe watch://a" {
		t.Errorf("upstream asked %q, want subscribe watch://a", got)
	}
	if err := up.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "watch://a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-subscriberGot:
		if uri != "watch://a" {
			t.Errorf("the subscriber heard of %q, want watch://a", uri)
		}
	case <-time.After(testenv.WaitLimit()):
		t.Fatal("the subscriber heard of no update")
	}
	if err := subscriber.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "watch://a"}); err != nil {
		t.Fatal(err)
	}
	if got := <-asked; got != "unsubscribe watch://a" {
		t.Errorf("upstream asked %q, want unsubscribe watch://a", got)
	}
	select {
	case uri := <-otherGot:
		t.Errorf("a client that did not subscribe heard of %q", uri)
	default:
	}

	// A client that ends without unsubscribing is unsubscribed then.
	if err := subscriber.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://a"}); err != nil {
		t.Fatal(err)
	}
	if got := <-asked; got != "subscribe watch://a" {
		t.Errorf("upstream asked %q, want subscribe watch://a", got)
	}
	subscriber.Close()
	select {
	case got := <-asked:
		if got != "unsubscribe watch://a" {
			t.Errorf("upstream asked %q, want unsubscribe watch://a", got)
		}
	case <-time.After(testenv.WaitLimit()):
		t.Error("the upstream was not unsubscribed when the client ended")
	}
}

// TestStatelessSubscriptionsOutliveSessions: with Static (stateless HTTP,
// a session per request) a subscription is not ended with the session that
// made it: a later session unsubscribes it.
func TestStatelessSubscriptionsOutliveSessions(t *testing.T) {
	p, _, asked := watchProxy(t, &gateway.ProxyOptions{Static: true})
	ctx := context.Background()
	first := connect(t, p.NewServer(), "2025-11-25")
	if err := first.Subscribe(ctx, &mcp.SubscribeParams{URI: "watch://a"}); err != nil {
		t.Fatal(err)
	}
	if got := <-asked; got != "subscribe watch://a" {
		t.Errorf("upstream asked %q, want subscribe watch://a", got)
	}
	first.Close()
	second := connect(t, p.NewServer(), "2025-11-25")
	if err := second.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "watch://a"}); err != nil {
		t.Fatalf("unsubscribe from a later session: %v", err)
	}
	if got := <-asked; got != "unsubscribe watch://a" {
		t.Errorf("upstream asked %q, want unsubscribe watch://a", got)
	}
}
