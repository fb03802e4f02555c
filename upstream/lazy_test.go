package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/tool"
	"github.com/toolsift/toolsift/upstream"
)

// waitState waits, bounded, until server is in state want.
func waitState(t *testing.T, hub *upstream.Hub, server string, want upstream.State) {
	t.Helper()
	deadline := time.Now().Add(waitLimit())
	for {
		st := statusOf(t, hub, server)
		if st.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s is %s, never became %s (error %v)", server, st.State, want, st.Err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testServers returns the test server processes among this process's
// children.
func testServers(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, c := range children(t) {
		if strings.HasSuffix(c, " testserver") && !strings.Contains(c, " Z ") {
			out = append(out, c)
		}
	}
	return out
}

// TestLazyStdio: a stdio server listed from the cache runs no process
// until its first call, and none again once it is idle.
func TestLazyStdio(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	dir, cache := t.TempDir(), t.TempDir()
	cfg := writeConfig(t, dir, map[string]any{"stub": map[string]any{"command": bin}})
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()

	got := make(changes, 16)
	// The idle timeout must outlast the gap between a call's return and
	// the look at /proc below, which on a loaded machine exceeds 100ms.
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache), IdleTimeout: time.Second}, got.onChange)
	if procs := testServers(t); len(procs) != 0 {
		t.Errorf("server processes after Connect: %v, want none", procs)
	}
	want := []string{"stub__crash", "stub__echo", "stub__where"}
	if diff := cmp.Diff(changeSummary{Server: "stub", Added: want}, summarize(got.next(t))); diff != "" {
		t.Errorf("change at Connect (-want +got):\n%s", diff)
	}
	if st := statusOf(t, hub, "stub"); st.State != upstream.StateLazy || !st.FromCache || st.Tools != 3 || st.ServerName != "testserver" {
		t.Errorf("status = %+v, want lazy with 3 cached tools", st)
	}

	for round := range 2 {
		res, err := hub.Call(context.Background(), "stub__echo", json.RawMessage(`{"text":"hi"}`))
		if err != nil || res.Content != "hi" {
			t.Fatalf("round %d: Call(stub__echo) = %+v, %v", round, res, err)
		}
		if procs := testServers(t); len(procs) != 1 {
			t.Errorf("round %d: server processes after a call: %v, want one", round, procs)
		}
		// Idle: stopped, back to lazy, its tools kept.
		waitState(t, hub, "stub", upstream.StateLazy)
		deadline := time.Now().Add(waitLimit())
		for len(testServers(t)) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if procs := testServers(t); len(procs) != 0 {
			t.Errorf("round %d: server processes once idle: %v, want none", round, procs)
		}
		if diff := cmp.Diff(want, toolNames(hub.Tools())); diff != "" {
			t.Errorf("round %d: Tools() once idle (-want +got):\n%s", round, diff)
		}
	}
	select {
	case ch := <-got:
		t.Errorf("unexpected change: %+v", summarize(ch))
	default:
	}
}

// TestLazyIdleStop: an in-memory server goes back to lazy when idle, never
// under a call in progress, and starts again on its next call. On the
// bubble's clock: the idle timeouts that pass are exact, and once one has
// passed after the call, so has the idle stop.
func TestLazyIdleStop(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	synctest.Test(t, func(t *testing.T) {
		cache := t.TempDir()
		var conns atomic.Int32
		srv := newServer("s", nil, "a")
		release := make(chan struct{})
		entered := make(chan struct{})
		srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				close(entered)
				<-release
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			})
		cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(srv, &conns)}}
		startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()

		got := make(changes, 16)
		const idle = 20 * time.Millisecond
		hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache), IdleTimeout: idle}, got.onChange)
		got.next(t) // the cached tools
		done := make(chan error, 1)
		go func() {
			_, err := hub.Call(context.Background(), "s__slow", nil)
			done <- err
		}()
		<-entered
		// Many idle timeouts pass during the call; the server stays up.
		time.Sleep(5 * idle)
		synctest.Wait()
		if st := statusOf(t, hub, "s"); st.State != upstream.StateReady {
			t.Errorf("during a call: state %s, want ready", st.State)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Call(s__slow): %v", err)
		}
		time.Sleep(idle) // no call since
		synctest.Wait()
		if st := statusOf(t, hub, "s"); st.State != upstream.StateLazy {
			t.Fatalf("an idle timeout after the call: state %s, want lazy", st.State)
		}
		if st := statusOf(t, hub, "s"); st.Tools != 2 {
			t.Errorf("idle server lists %d tools, want 2", st.Tools)
		}
		if res, err := hub.Call(context.Background(), "s__a", nil); err != nil || res.Content != "s:a" {
			t.Errorf("Call(s__a) after idle = %+v, %v", res, err)
		}
		if n := conns.Load(); n != 3 {
			t.Errorf("%d connections, want 3 (first hub, first call, call after idle)", n)
		}
		select {
		case ch := <-got:
			t.Errorf("unexpected change: %+v", summarize(ch))
		default:
		}
	})
}

// TestLazySingleFlight: concurrent first calls start the server once.
func TestLazySingleFlight(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	cache := t.TempDir()
	var conns atomic.Int32
	cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(newServer("s", nil, "a", "b"), &conns)}}
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()
	conns.Store(0)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			name := []string{"s__a", "s__b"}[i%2]
			if res, err := hub.Call(context.Background(), name, nil); err != nil || res.Content != "s:"+name[3:] {
				t.Errorf("Call(%s) = %+v, %v", name, res, err)
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 16 concurrent calls, want 1", n)
	}
}

// TestLazyStartFails: a lazy server that cannot start fails the call with
// ErrServerUnavailable, its error and stderr, and its tools are removed.
func TestLazyStartFails(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	dir, cache := t.TempDir(), t.TempDir()
	// The same command, a working server on the first run and a broken one
	// on the next: as when an upgrade breaks it or a token expires.
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec "+testServerPath(t)+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, map[string]any{"tok": map[string]any{"command": bin}})
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'fatal: token expired' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, got.onChange)
	got.next(t) // the cached tools
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	_, err := hub.Call(ctx, "tok__echo", json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, upstream.ErrServerUnavailable) || !errors.Is(err, tool.ErrUnavailable) {
		t.Errorf("error = %v, want ErrServerUnavailable", err)
	}
	for _, s := range []string{"server tok failed to start", "exit status 1", "fatal: token expired"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error = %v, want it to mention %q", err, s)
		}
	}
	if diff := cmp.Diff(changeSummary{Server: "tok", Removed: []string{"tok__crash", "tok__echo", "tok__where"}}, summarize(got.next(t))); diff != "" {
		t.Errorf("change after the failed start (-want +got):\n%s", diff)
	}
	if st := statusOf(t, hub, "tok"); st.State != upstream.StateFailed || st.Tools != 0 || len(hub.Tools()) != 0 {
		t.Errorf("status = %+v with %d tools listed; want failed, none", st, len(hub.Tools()))
	}
	if _, err := hub.Call(ctx, "tok__echo", nil); !errors.Is(err, upstream.ErrServerUnavailable) {
		t.Errorf("second call: error = %v, want ErrServerUnavailable", err)
	}
}

// TestLazyRefresh: Refresh starts lazy servers, which re-lists them.
func TestLazyRefresh(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	cache := t.TempDir()
	var conns atomic.Int32
	srv := newServer("s", nil, "a")
	cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(srv, &conns)}}
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()
	addTextTool(srv, "b", "Tool b.", "s:b")

	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, got.onChange)
	got.next(t) // the cached tools
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
	defer cancel()
	if err := hub.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, hub, "s"); st.State != upstream.StateReady {
		t.Errorf("after Refresh: state %s, want ready", st.State)
	}
	if diff := cmp.Diff(changeSummary{Server: "s", Added: []string{"s__b"}}, summarize(got.next(t))); diff != "" {
		t.Errorf("change from Refresh (-want +got):\n%s", diff)
	}
}

// TestLazyClose: a Hub closed with lazy servers (never started, or
// starting) returns ErrClosed and leaves nothing behind.
func TestLazyClose(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	cache := t.TempDir()
	var conns atomic.Int32
	cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(newServer("s", nil, "a"), &conns)}}
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil)
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, hub, "s"); st.State != upstream.StateClosed {
		t.Errorf("state after Close: %s, want closed", st.State)
	}
	if _, err := hub.Call(context.Background(), "s__a", nil); !errors.Is(err, upstream.ErrClosed) {
		t.Errorf("Call after Close: error = %v, want ErrClosed", err)
	}
}

// TestLazyStartBounded: a lazy start that hangs is bounded by the caller's
// ctx and by the server's connection timeout.
func TestLazyStartBounded(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	stub := testServerPath(t)
	dir, cache := t.TempDir(), t.TempDir()
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec "+stub+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The first start, which fills the cache, has no timeout of its own
	// (startHub's, which a loaded machine does not reach); the timeout is
	// not part of the launch's fingerprint.
	startHub(t, writeConfig(t, dir, map[string]any{"slow": map[string]any{"command": bin}}), &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()
	// Same launch, but now it never answers initialize.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec "+stub+" -mode hang\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, map[string]any{"slow": map[string]any{"command": bin, "timeout": "1s"}})
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := hub.Call(ctx, "slow__echo", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call with a short ctx: error = %v, want its deadline", err)
	}
	_, err := hub.Call(context.Background(), "slow__echo", nil)
	if !errors.Is(err, upstream.ErrServerUnavailable) || !strings.Contains(err.Error(), "no answer in time") || !strings.Contains(err.Error(), "hanging in initialize") {
		t.Errorf("call after the server's timeout: error = %v, want ErrServerUnavailable, no answer in time, and its stderr", err)
	}
}
