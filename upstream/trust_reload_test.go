package upstream_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// watchBus is what a shared store (PostgreSQL) does for its watchers:
// it tells every other handle of the keys one handle put or deleted.
type watchBus struct {
	mu   sync.Mutex
	subs []watchSub
}

type watchSub struct {
	from   *watchedStore
	prefix string
	ch     chan string
}

func (b *watchBus) publish(from *watchedStore, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if s.from != from && strings.HasPrefix(key, s.prefix) {
			s.ch <- key
		}
	}
}

// watchedStore is one handle of a shared store over one Memory: a
// store.Watcher, counting its Gets.
type watchedStore struct {
	*store.Memory
	bus  *watchBus
	gets atomic.Int64
}

var _ store.Watcher = (*watchedStore)(nil)

func (w *watchedStore) Get(ctx context.Context, key string) ([]byte, error) {
	w.gets.Add(1)
	return w.Memory.Get(ctx, key)
}

func (w *watchedStore) Put(ctx context.Context, key string, v []byte) error {
	if err := w.Memory.Put(ctx, key, v); err != nil {
		return err
	}
	w.bus.publish(w, key)
	return nil
}

func (w *watchedStore) Delete(ctx context.Context, key string) error {
	if err := w.Memory.Delete(ctx, key); err != nil {
		return err
	}
	w.bus.publish(w, key)
	return nil
}

func (w *watchedStore) Watch(ctx context.Context, prefix string, ready func(), f func(string)) error {
	ch := make(chan string, 1024)
	w.bus.mu.Lock()
	w.bus.subs = append(w.bus.subs, watchSub{from: w, prefix: prefix, ch: ch})
	w.bus.mu.Unlock()
	if ready != nil {
		ready()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case key := <-ch:
			f(key)
		}
	}
}

// TestReloadTrust: a Hub serving a changed tool (toolsift serve) learns
// through ReloadTrust that another Hub over the same store (toolbench
// trust, another process or replica) accepted it: the tool gets its
// readOnlyHint back; with nothing written since, ReloadTrust reads no
// record again. Over a Dir (files, two processes on one machine) and over
// a shared store that is a store.Watcher, where ReloadTrust reads nothing
// at all. In a bubble, so that the watcher's news is known to be in.
func TestReloadTrust(t *testing.T) {
	for _, kind := range []string{"dir", "watcher"} {
		t.Run(kind, func(t *testing.T) {
			checkGoroutines(t)
			synctest.Test(t, func(t *testing.T) {
				var serveStore, trustStore store.Store
				var watched *watchedStore
				switch kind {
				case "dir":
					dir := t.TempDir()
					serveStore, trustStore = dirStore(t, dir), dirStore(t, dir)
				case "watcher":
					mem, bus := store.NewMemory(), &watchBus{}
					watched = &watchedStore{Memory: mem, bus: bus}
					serveStore, trustStore = watched, &watchedStore{Memory: mem, bus: bus}
				}
				srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
				setReadTool(srv, "Read a file.", false, `{"type":"object"}`)
				cfg := &config.Config{Servers: map[string]config.Server{"fs": memServer(srv)}}
				ctx := context.Background()

				got := make(changes, 16)
				serve := startHub(t, cfg, &upstream.HubOptions{Store: serveStore, Start: upstream.StartEager}, got.onChange)
				got.next(t)
				setReadTool(srv, "Read a file, now read-only.", true, `{"type":"object"}`)
				got.next(t)
				if readOnlyOf(t, serve, "fs__read") {
					t.Fatal("a changed tool kept its readOnlyHint")
				}
				if names, err := serve.ReloadTrust(ctx); err != nil || len(names) != 0 {
					t.Fatalf("ReloadTrust before anything was accepted = %v, %v; want none", names, err)
				}

				trust := startHub(t, cfg, &upstream.HubOptions{Store: trustStore, Start: upstream.StartEager}, nil)
				if accepted, err := trust.Trust(ctx, "fs"); err != nil || !slices.Equal(accepted, []string{"fs__read"}) {
					t.Fatalf("Trust = %v, %v", accepted, err)
				}
				trust.Close()

				// A watcher hears of the acceptance a moment after it was
				// written: once every goroutine of the bubble waits, it has.
				synctest.Wait()
				names, err := serve.ReloadTrust(ctx)
				if err != nil || !slices.Equal(names, []string{"fs"}) {
					t.Fatalf("ReloadTrust after the acceptance = %v, %v; want [fs]", names, err)
				}
				if !readOnlyOf(t, serve, "fs__read") {
					t.Error("after ReloadTrust: the accepted tool has no readOnlyHint")
				}
				if st := statusOf(t, serve, "fs"); len(st.Changed) != 0 {
					t.Errorf("after ReloadTrust: changed %v", st.Changed)
				}
				var before int64
				if watched != nil {
					before = watched.gets.Load()
				}
				for range 3 {
					if names, err := serve.ReloadTrust(ctx); err != nil || len(names) != 0 {
						t.Fatalf("ReloadTrust with nothing new = %v, %v; want none", names, err)
					}
				}
				if watched != nil {
					if n := watched.gets.Load() - before; n != 0 {
						t.Errorf("ReloadTrust over a Watcher with nothing new read the store %d times, want 0", n)
					}
				}
			})
		})
	}
}

// failingStore is a Store whose writes fail (a full disk, a database
// gone read-only).
type failingStore struct{ store.Store }

func (failingStore) Put(context.Context, string, []byte) error {
	return errors.New("disk full")
}

// TestStoreWriteFails: a store that refuses writes costs the Hub its cache
// and trust records across runs, nothing else: servers list and are
// called, and the failures are warned of.
func TestStoreWriteFails(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	var log logBuffer
	cfg := &config.Config{Servers: map[string]config.Server{"s": memServer(newServer("s", nil, "a"))}}
	hub := startHub(t, cfg, &upstream.HubOptions{Store: failingStore{store.NewMemory()}, Logger: log.logger()}, nil)
	if st := statusOf(t, hub, "s"); st.State != upstream.StateReady || st.Tools != 1 {
		t.Fatalf("status %+v; want ready with its tool", st)
	}
	if res, err := hub.Call(context.Background(), "s__a", nil); err != nil || res.Content != "s:a" {
		t.Fatalf("Call = %+v, %v", res, err)
	}
	for _, w := range []string{"writing the cache entry failed", "writing the tool trust records failed", "disk full"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, log.String())
		}
	}
}

// TestCacheFolderBeforeStore: a cache folder written before the Store
// seam (testdata/cache-before-store, by toolsift at the commit before it)
// is read as it is: the server is served from its cache entry without
// starting, and its tool keeps the readOnlyHint its trust record holds.
func TestCacheFolderBeforeStore(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.CopyFS(dir, os.DirFS("testdata/cache-before-store")); err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, nil)
	setReadTool(srv, "Read a file.", true, `{"type":"object","properties":{"path":{"type":"string"}}}`)
	var conns atomic.Int32
	cfg := &config.Config{Servers: map[string]config.Server{"fs": countedServer(srv, &conns)}}
	var log logBuffer
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir), Logger: log.logger()}, nil)
	st := statusOf(t, hub, "fs")
	if st.State != upstream.StateLazy || !st.FromCache || st.Tools != 1 || conns.Load() != 0 {
		t.Fatalf("status %+v after %d connections; want lazy from the cache, not started", st, conns.Load())
	}
	if !readOnlyOf(t, hub, "fs__read") {
		t.Error("the cached tool lost the readOnlyHint its trust record holds")
	}
	if log.String() != "" {
		t.Errorf("warnings:\n%s", log.String())
	}
}

// countingStore counts the Gets of a Store.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

// TestReloadTrustOwnWrites: the trust records a Hub writes itself (a
// server's first listing) are no reason for ReloadTrust to read every
// record again: it reads the trust generation only.
func TestReloadTrustOwnWrites(t *testing.T) {
	checkGoroutines(t)
	st := &countingStore{Store: dirStore(t, t.TempDir())}
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for _, name := range []string{"a", "b", "c"} {
		cfg.Servers[name] = memServer(newServer(name, nil, "one", "two"))
	}
	hub := startHub(t, cfg, &upstream.HubOptions{Store: st, Start: upstream.StartEager}, nil)
	before := st.gets.Load()
	if names, err := hub.ReloadTrust(context.Background()); err != nil || len(names) != 0 {
		t.Fatalf("ReloadTrust = %v, %v; want none", names, err)
	}
	if n := st.gets.Load() - before; n != 1 {
		t.Errorf("ReloadTrust after the Hub's own writes read %d values, want 1 (the trust generation)", n)
	}
}
