package upstream_test

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestHubWaitListed: over a Background Connect, Connecting names the
// server still connecting for the first time and not the one listed from
// the cache; WaitListed gives up on it when ctx ends, saying so, waits for
// nothing for a name of the cached server, and returns once the slow one
// has listed, its tool applied.
func TestHubWaitListed(t *testing.T) {
	checkGoroutines(t)
	bin := testServerPath(t)
	dir, cache := t.TempDir(), t.TempDir()
	stub := writeConfig(t, dir, map[string]any{"stub": map[string]any{"command": bin}})
	startHub(t, stub, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close() // caches stub's tools

	release := make(chan struct{})
	cfg := &config.Config{Dir: dir, Servers: map[string]config.Server{
		"stub": stub.Servers["stub"],
		"held": {Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return memServer(newServer("held", nil, "pong")).Dial(ctx)
		}},
	}}
	ch := make(changes, 8)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache), Background: true}, ch.onChange)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	if diff := cmp.Diff([]string{"held"}, hub.Connecting()); diff != "" {
		t.Errorf("Connecting (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if diff := cmp.Diff([]string{"held"}, hub.WaitListed(ctx)); diff != "" {
		t.Errorf("WaitListed with an ended ctx (-want +got):\n%s", diff)
	}
	// stub's tools are listed (lazy, from the cache): nothing to wait for,
	// even under an ended ctx.
	for _, names := range [][]string{{"stub"}, {"stub__echo"}, {"nobody__echo"}} {
		if got := hub.WaitListed(ctx, names...); got != nil {
			t.Errorf("WaitListed(%q) = %v, want nil: not connecting", names, got)
		}
	}

	close(release)
	wctx, wcancel := context.WithTimeout(context.Background(), waitLimit())
	defer wcancel()
	if got := hub.WaitListed(wctx, "held__pong"); got != nil {
		t.Fatalf("WaitListed(held__pong) = %v, want nil once held listed", got)
	}
	var names []string
	for _, tl := range hub.Tools() {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "held__pong") {
		t.Errorf("Tools after WaitListed = %v, want held__pong", names)
	}
	if got := hub.Connecting(); got != nil {
		t.Errorf("Connecting after held listed = %v, want none", got)
	}
}
