package upstream_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// cachedAndHeld returns a config of two servers and the cache folder of
// their Hubs: stub, whose tools the cache already holds (a Hub listed them
// once), and held, whose connection waits for a receive from release (or
// for its ctx to end) before it serves one tool, "pong".
func cachedAndHeld(t *testing.T, release <-chan struct{}) (*config.Config, string) {
	t.Helper()
	dir, cache := t.TempDir(), t.TempDir()
	stub := writeConfig(t, dir, map[string]any{"stub": map[string]any{"command": testServerPath(t)}})
	startHub(t, stub, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close() // caches stub's tools
	return &config.Config{Dir: dir, Servers: map[string]config.Server{
		"stub": stub.Servers["stub"],
		"held": {Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return memServer(newServer("held", nil, "pong")).Dial(ctx)
		}},
	}}, cache
}

// TestHubBackground: with HubOptions.Background, Connect returns once the
// cached server is announced, while a server it started is still
// connecting; that one's tools reach OnChange and Tools when it is
// through, and Progress hears of it.
func TestHubBackground(t *testing.T) {
	checkGoroutines(t)
	release := make(chan struct{})
	cfg, cache := cachedAndHeld(t, release)
	ch := make(changes, 8)
	progress := make(chan upstream.Progress, 8)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache), Background: true,
		Progress: func(p upstream.Progress) { progress <- p }}, ch.onChange)
	defer close(release)

	if got := summarize(ch.next(t)); got.Server != "stub" || len(got.Added) == 0 {
		t.Fatalf("first change %+v, want stub's cached tools", got)
	}
	if st := statusOf(t, hub, "held"); st.State != upstream.StateConnecting {
		t.Fatalf("held is %s when Connect returned, want %s", st.State, upstream.StateConnecting)
	}
	for _, tl := range hub.Tools() {
		if tl.Server == "held" {
			t.Fatalf("held's %s listed before it connected", tl.Name)
		}
	}

	select {
	case release <- struct{}{}:
	case <-time.After(waitLimit()):
		t.Fatal("held was never dialled")
	}
	if diff := cmp.Diff(changeSummary{Server: "held", Added: []string{"held__pong"}}, summarize(ch.next(t))); diff != "" {
		t.Errorf("held's change (-want +got):\n%s", diff)
	}
	if st := statusOf(t, hub, "held"); st.State != upstream.StateReady || st.Tools != 1 {
		t.Errorf("held: %s with %d tools, want ready with 1", st.State, st.Tools)
	}
	for {
		select {
		case p := <-progress:
			if p.Pending > 0 {
				continue
			}
			if p.Ready != 2 {
				t.Errorf("last progress %+v, want both ready", p)
			}
		case <-time.After(waitLimit()):
			t.Fatal("Progress never heard that held is through")
		}
		return
	}
}
