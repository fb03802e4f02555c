package upstream_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestHubWaitListed: over a Background Connect, Unlisted names the
// server still connecting for the first time and not the one listed from
// the cache; WaitListed gives up on it when ctx ends, saying so, waits for
// nothing for a name of the cached server, and returns once the slow one
// has listed, its tool applied.
func TestHubWaitListed(t *testing.T) {
	checkGoroutines(t)
	release := make(chan struct{})
	cfg, cache := cachedAndHeld(t, release)
	cfg.Servers["broken"] = config.Server{Dial: func(context.Context) (io.ReadWriteCloser, error) { return nil, errors.New("no such thing") }}
	ch := make(changes, 8)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache), Background: true}, ch.onChange)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	// broken may be connecting still, or failed.
	if connecting, failed := hub.Unlisted(context.Background()); !slices.Contains(connecting, "held") || slices.Contains(connecting, "stub") || slices.Contains(failed, "stub") {
		t.Errorf("Unlisted = %v, %v; want held connecting, stub in neither", connecting, failed)
	}
	scoped := upstream.WithServerScope(context.Background(), func(s string) bool { return s == "stub" })
	if connecting, _ := hub.Unlisted(scoped); connecting != nil {
		t.Errorf("Unlisted in stub's scope only = %v, want none", connecting)
	}
	if got := hub.WaitListed(scoped); got != nil {
		t.Errorf("WaitListed in stub's scope only = %v, want nil at once", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if diff := cmp.Diff([]string{"held"}, hub.WaitListed(ctx, "held")); diff != "" {
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
	if got := hub.WaitListed(wctx); got != nil {
		t.Fatalf("WaitListed() = %v, want nil once broken failed", got)
	}
	connecting, failed := hub.Unlisted(context.Background())
	if connecting != nil || !slices.Equal(failed, []string{"broken"}) {
		t.Errorf("Unlisted once every server is through = %v, %v; want none connecting, broken failed", connecting, failed)
	}
}
