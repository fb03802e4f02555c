package upstream_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// TestHubProgress: HubOptions.Progress counts the servers while Connect
// waits for one that is held back, counts a lazy (cached) server as ready,
// and is told when the held one is done.
func TestHubProgress(t *testing.T) {
	checkGoroutines(t)
	bin := testServerPath(t)
	dir, cache := t.TempDir(), t.TempDir()
	// A first Hub caches stub's tools; the second lists them lazily.
	stub := writeConfig(t, dir, map[string]any{"stub": map[string]any{"command": bin}})
	startHub(t, stub, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()

	release := make(chan struct{})
	cfg := &config.Config{Dir: dir, Servers: map[string]config.Server{
		"stub": stub.Servers["stub"],
		"good": memServer(newServer("good", nil, "ping")),
		"held": {Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return memServer(newServer("held", nil, "pong")).Dial(ctx)
		}},
		"refuses": {Dial: func(context.Context) (io.ReadWriteCloser, error) {
			return nil, errors.New("connection refused")
		}},
		"off": {Disabled: true, Command: "does-not-exist"},
	}}

	var mu sync.Mutex
	var reports []upstream.Progress
	heldPending, allDone := make(chan struct{}), make(chan struct{})
	closeHeld := sync.OnceFunc(func() { close(heldPending) })
	closeDone := sync.OnceFunc(func() { close(allDone) })
	var hub *upstream.Hub
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: dirStore(t, cache), Progress: func(p upstream.Progress) {
		hub.Status() // Progress may look at the Hub
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, p)
		if p.Pending == 1 && p.Ready+p.Failed+p.Disabled == 4 {
			closeHeld() // two reports may count the same
		}
		if p.Pending == 0 {
			closeDone()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()

	connected := make(chan error, 1)
	go func() { connected <- hub.Connect(context.Background(), nil) }()
	select {
	case <-heldPending:
	case err := <-connected:
		t.Fatalf("Connect returned (%v) while a server was held", err)
	case <-time.After(waitLimit()):
		t.Fatal("Progress never reported only the held server pending")
	}
	close(release)
	select {
	case err := <-connected:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit()):
		t.Fatal("Connect did not return after the held server was released")
	}

	// The held server's ready channel closes before its report is made,
	// so Connect may return first: wait for the report (a hang guard).
	select {
	case <-allDone:
	case <-time.After(waitLimit()):
	}
	mu.Lock()
	defer mu.Unlock()
	want := []upstream.Progress{
		{Servers: 5, Ready: 2, Failed: 1, Pending: 1, Disabled: 1}, // stub (lazy) and good ready
		{Servers: 5, Ready: 3, Failed: 1, Pending: 0, Disabled: 1},
	}
	// Two reports may count the same (a server's report races the next
	// one's): compare the last two distinct ones.
	distinct := slices.Compact(slices.Clone(reports))
	if diff := cmp.Diff(want, distinct[max(0, len(distinct)-2):]); diff != "" {
		t.Errorf("last two reports (-want +got):\n%s\nall: %+v", diff, reports)
	}
	for i, p := range reports {
		if p.Ready+p.Failed+p.Pending+p.Disabled != p.Servers {
			t.Errorf("report %d %+v does not add up", i, p)
		}
		if i > 0 && p.Pending > reports[i-1].Pending {
			t.Errorf("report %d: pending grew: %+v after %+v", i, p, reports[i-1])
		}
	}
	if first := reports[0]; first.Pending == 0 {
		t.Errorf("first report %+v: want the held server (at least) pending", first)
	}
	if st := statusOf(t, hub, "stub"); st.State != upstream.StateLazy {
		t.Errorf("stub is %s, want lazy (counted as ready)", st.State)
	}
}
