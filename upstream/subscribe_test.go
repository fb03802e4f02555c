package upstream_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// watchingServer lists the resource watch://a and records the
// subscriptions it is asked for.
type watchingServer struct {
	*mcp.Server
	mu  sync.Mutex
	log []string
}

func newWatchingServer() *watchingServer {
	w := &watchingServer{}
	w.Server = mcp.NewServer(&mcp.Implementation{Name: "w", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.log = append(w.log, "subscribe "+req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.log = append(w.log, "unsubscribe "+req.Params.URI)
			return nil
		},
	})
	addTextTool(w.Server, "t", "A tool.", "ok")
	w.AddResource(&mcp.Resource{Name: "a", URI: "watch://a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "watch://a", Text: "a"}}}, nil
	})
	return w
}

func (w *watchingServer) asked() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

// TestHubSubscribe: subscriptions go to the resource's server once however
// many are made, and end there with the last; the server's updates reach
// OnResourceUpdated; an unknown resource, or one not subscribed to, is an
// error.
func TestHubSubscribe(t *testing.T) {
	checkGoroutines(t)
	w := newWatchingServer()
	updated := make(chan string, 4)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{
		"w": memServer(w.Server),
	}}, &upstream.HubOptions{OnResourceUpdated: func(server, uri string) { updated <- server + " " + uri }}, nil)
	ctx := context.Background()
	for range 2 {
		if err := hub.Passthrough().Subscribe(ctx, "watch://a"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"subscribe watch://a"}, w.asked()); diff != "" {
		t.Errorf("after two subscriptions the server was asked (-want +got):\n%s", diff)
	}
	if err := w.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "watch://a"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "w watch://a" {
			t.Errorf("OnResourceUpdated(%q), want w watch://a", uri)
		}
	case <-time.After(waitLimit()):
		t.Fatal("OnResourceUpdated was not called")
	}
	for range 2 {
		if err := hub.Passthrough().Unsubscribe(ctx, "watch://a"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"subscribe watch://a", "unsubscribe watch://a"}, w.asked()); diff != "" {
		t.Errorf("after two unsubscriptions the server was asked (-want +got):\n%s", diff)
	}
	if err := hub.Passthrough().Unsubscribe(ctx, "watch://a"); !errors.Is(err, upstream.ErrUnknownResource) {
		t.Errorf("a third Unsubscribe: %v, want ErrUnknownResource", err)
	}
	if err := hub.Passthrough().Subscribe(ctx, "nowhere://x"); !errors.Is(err, upstream.ErrUnknownResource) {
		t.Errorf("Subscribe to an unknown resource: %v, want ErrUnknownResource", err)
	}
}

// TestHubSubscribeScopes: two servers list the same URI, and two callers
// of different scopes, each seeing one of them, subscribe to it: each
// server is asked for its own caller's subscription, each one's updates
// are told under its own name, and one caller's unsubscription ends its
// server's alone.
func TestHubSubscribeScopes(t *testing.T) {
	checkGoroutines(t)
	w1, w2 := newWatchingServer(), newWatchingServer()
	updated := make(chan string, 4)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{
		"w1": memServer(w1.Server), "w2": memServer(w2.Server),
	}}, &upstream.HubOptions{OnResourceUpdated: func(server, uri string) { updated <- server + " " + uri }}, nil)
	ctx := context.Background()
	only := func(name string) context.Context {
		return upstream.WithServerScope(ctx, func(s string) bool { return s == name })
	}
	for _, name := range []string{"w1", "w2"} {
		if err := hub.Passthrough().Subscribe(only(name), "watch://a"); err != nil {
			t.Fatalf("%s's caller: %v", name, err)
		}
	}
	for name, w := range map[string]*watchingServer{"w1": w1, "w2": w2} {
		if diff := cmp.Diff([]string{"subscribe watch://a"}, w.asked()); diff != "" {
			t.Errorf("%s was asked (-want +got):\n%s", name, diff)
		}
	}
	for name, w := range map[string]*watchingServer{"w1": w1, "w2": w2} {
		if err := w.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "watch://a"}); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-updated:
			if got != name+" watch://a" {
				t.Errorf("OnResourceUpdated(%s) after %s's update", got, name)
			}
		case <-time.After(waitLimit()):
			t.Fatalf("OnResourceUpdated was not called for %s's update", name)
		}
	}
	if err := hub.Passthrough().Unsubscribe(only("w1"), "watch://a"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"subscribe watch://a", "unsubscribe watch://a"}, w1.asked()); diff != "" {
		t.Errorf("w1 was asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"subscribe watch://a"}, w2.asked()); diff != "" {
		t.Errorf("w2 was asked (-want +got):\n%s", diff)
	}
	if err := hub.Passthrough().Unsubscribe(only("w1"), "watch://a"); !errors.Is(err, upstream.ErrUnknownResource) {
		t.Errorf("w1's caller unsubscribing again: %v, want ErrUnknownResource", err)
	}
	if err := hub.Passthrough().Unsubscribe(only("w2"), "watch://a"); err != nil {
		t.Fatal(err)
	}
}

// TestHubSubscribeAfterRestart: a server that restarts is sent the
// subscriptions it had again.
func TestHubSubscribeAfterRestart(t *testing.T) {
	checkGoroutines(t)
	w := newWatchingServer()
	sessions := make(chan *mcp.ServerSession, 4)
	sc := config.Server{Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
		ss, conn, err := connectPipe(ctx, w.Server)
		if err != nil {
			return nil, err
		}
		sessions <- ss
		return conn, nil
	}}
	got := make(changes, 16)
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"w": sc}},
		&upstream.HubOptions{Backoff: time.Millisecond}, got.onChange)
	got.next(t)
	if err := hub.Passthrough().Subscribe(context.Background(), "watch://a"); err != nil {
		t.Fatal(err)
	}
	(<-sessions).Close()
	got.next(t) // its tools removed
	got.next(t) // and back
	if diff := cmp.Diff([]string{"subscribe watch://a", "subscribe watch://a"}, w.asked()); diff != "" {
		t.Errorf("the server was asked (-want +got):\n%s", diff)
	}
}
