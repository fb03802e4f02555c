package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// countedServer serves srv in memory, counting the connections made to
// it: a lazy server has none until its first call. Call cacheTransports
// first, so that the Hub caches it.
func countedServer(srv *mcp.Server, n *atomic.Int32) config.Server {
	sc := memServer(srv)
	connect := sc.Dial
	sc.Dial = func(ctx context.Context) (io.ReadWriteCloser, error) {
		n.Add(1)
		return connect(ctx)
	}
	return sc
}

// cacheTransports lets the Hubs of a test cache in-memory servers.
func cacheTransports(t *testing.T) {
	t.Cleanup(upstream.CacheDials())
}

// logBuffer collects a Hub's log, for tests that look for warnings.
type logBuffer struct{ testenv.Buffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// cacheFiles returns the cache entries under dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "catalog", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCacheWrittenThenLazy: a Hub writes the tools a server listed to the
// cache; the next Hub lists them, and applies them through OnChange,
// without connecting, and the first call connects.
func TestCacheWrittenThenLazy(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	dir := t.TempDir()
	var conns atomic.Int32
	cfg := func() *config.Config {
		return &config.Config{Servers: map[string]config.Server{
			"docs": func() config.Server {
				sc := countedServer(newServer("docs", nil, "find", "read", "delete"), &conns)
				sc.DisabledTools = []string{"delete"}
				return sc
			}(),
		}}
	}

	hub1 := startHub(t, cfg(), &upstream.HubOptions{Store: dirStore(t, dir)}, nil)
	st1 := statusOf(t, hub1, "docs")
	if st1.State != upstream.StateReady || st1.FromCache || st1.CachedAt.IsZero() {
		t.Fatalf("first hub: %+v; want ready, not from cache, with CachedAt", st1)
	}
	if err := hub1.Close(); err != nil {
		t.Fatal(err)
	}
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	for _, p := range []string{files[0], filepath.Dir(files[0])} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700 | os.ModeDir
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	var entry struct {
		Format      int    `json:"format"`
		Server      string `json:"server"`
		Fingerprint string `json:"fingerprint"`
		Tools       []struct{ Name, Hash string }
	}
	data, _ := os.ReadFile(files[0])
	if err := json.Unmarshal(data, &entry); err != nil {
		t.Fatal(err)
	}
	if entry.Format != 2 || entry.Server != "docs" || len(entry.Fingerprint) != 64 || len(entry.Tools) != 2 || entry.Tools[0].Hash == "" {
		t.Errorf("cache entry = %s", data)
	}

	conns.Store(0)
	got := make(changes, 16)
	hub2 := startHub(t, cfg(), &upstream.HubOptions{Store: dirStore(t, dir)}, got.onChange)
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections at Connect, want none", n)
	}
	st := statusOf(t, hub2, "docs")
	if st.State != upstream.StateLazy || !st.FromCache || !st.CachedAt.Equal(st1.CachedAt) || st.Tools != 2 || st.Disabled != 1 || st.ServerName != "docs" {
		t.Errorf("lazy status = %+v", st)
	}
	want := []string{"docs__find", "docs__read"}
	if diff := cmp.Diff(changeSummary{Server: "docs", Added: want}, summarize(got.next(t))); diff != "" {
		t.Errorf("change at Connect (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, toolNames(hub2.Tools())); diff != "" {
		t.Errorf("Tools() (-want +got):\n%s", diff)
	}
	// A filtered-out tool is refused without starting the server.
	if _, err := hub2.Call(context.Background(), "docs__delete", nil); !errors.Is(err, upstream.ErrToolDisabled) || conns.Load() != 0 {
		t.Errorf("Call(docs__delete) error = %v after %d connections; want ErrToolDisabled, none", err, conns.Load())
	}

	res, err := hub2.Call(context.Background(), "docs__find", nil)
	if err != nil || res.Content != "docs:find" {
		t.Fatalf("Call(docs__find) = %+v, %v", res, err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections after the first call, want 1", n)
	}
	st = statusOf(t, hub2, "docs")
	if st.State != upstream.StateReady || st.FromCache || st.Tools != 2 {
		t.Errorf("status after the call = %+v; want ready, not from cache", st)
	}
	// Same list: the start changes nothing for consumers.
	select {
	case ch := <-got:
		t.Errorf("unexpected change after the start: %+v", summarize(ch))
	default:
	}
}

// TestCacheStale: the server's tools changed between runs; the first call
// reconciles, and a call of a tool it no longer lists says so.
func TestCacheStale(t *testing.T) {
	for _, first := range []string{"kept", "gone"} {
		t.Run("first call "+first, func(t *testing.T) {
			checkGoroutines(t)
			cacheTransports(t)
			dir := t.TempDir()
			var conns atomic.Int32
			old := newServer("wx", nil, "kept", "gone")
			addTextTool(old, "edited", "Old description.", "old")
			startHub(t, &config.Config{Servers: map[string]config.Server{"wx": countedServer(old, &conns)}},
				&upstream.HubOptions{Store: dirStore(t, dir)}, nil).Close()

			// The next run: "gone" removed, "edited" changed, "new" added.
			cur := newServer("wx", nil, "kept", "new")
			addTextTool(cur, "edited", "New description.", "new")
			got := make(changes, 16)
			hub := startHub(t, &config.Config{Servers: map[string]config.Server{"wx": countedServer(cur, &conns)}},
				&upstream.HubOptions{Store: dirStore(t, dir)}, got.onChange)
			if diff := cmp.Diff(changeSummary{Server: "wx", Added: []string{"wx__edited", "wx__gone", "wx__kept"}}, summarize(got.next(t))); diff != "" {
				t.Errorf("change at Connect (-want +got):\n%s", diff)
			}

			res, err := hub.Call(context.Background(), "wx__"+first, nil)
			switch first {
			case "kept":
				if err != nil || res.Content != "wx:kept" {
					t.Errorf("Call(wx__kept) = %+v, %v", res, err)
				}
			case "gone":
				if !errors.Is(err, upstream.ErrUnknownTool) || !strings.Contains(err.Error(), "no longer lists it") {
					t.Errorf("Call(wx__gone) error = %v; want ErrUnknownTool saying the server no longer lists it", err)
				}
			}
			want := changeSummary{Server: "wx", Added: []string{"wx__new"}, Changed: []string{"wx__edited"}, Removed: []string{"wx__gone"}}
			if diff := cmp.Diff(want, summarize(got.next(t))); diff != "" {
				t.Errorf("reconciling change (-want +got):\n%s", diff)
			}
			if _, err := hub.Call(context.Background(), "wx__gone", nil); !errors.Is(err, upstream.ErrUnknownTool) {
				t.Errorf("Call(wx__gone) after the start: error = %v, want ErrUnknownTool", err)
			}
			if res, err := hub.Call(context.Background(), "wx__new", nil); err != nil || res.Content != "wx:new" {
				t.Errorf("Call(wx__new) = %+v, %v", res, err)
			}
			hub.Close()

			// The entry was rewritten with the fresh list.
			hub3 := startHub(t, &config.Config{Servers: map[string]config.Server{"wx": countedServer(cur, &conns)}},
				&upstream.HubOptions{Store: dirStore(t, dir)}, nil)
			if st := statusOf(t, hub3, "wx"); st.State != upstream.StateLazy {
				t.Errorf("third hub: state %s, want lazy", st.State)
			}
			if diff := cmp.Diff([]string{"wx__edited", "wx__kept", "wx__new"}, toolNames(hub3.Tools())); diff != "" {
				t.Errorf("third hub's tools (-want +got):\n%s", diff)
			}
			if n := conns.Load(); n != 2 {
				t.Errorf("%d connections in all, want 2 (the first hub and the first call)", n)
			}
		})
	}
}

// TestCacheMisses: a different launch (fingerprint), eager mode and a
// Memory store all connect at Connect.
func TestCacheMisses(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	dir := t.TempDir()
	srv := newServer("s", nil, "a", "b")
	var conns atomic.Int32
	base := countedServer(srv, &conns)
	startHub(t, &config.Config{Servers: map[string]config.Server{"s": base}}, &upstream.HubOptions{Store: dirStore(t, dir)}, nil).Close()

	changed := func(f func(*config.Server)) config.Server { sc := base; f(&sc); return sc }
	for _, tt := range []struct {
		name  string
		sc    config.Server
		opts  upstream.HubOptions
		state upstream.State
	}{
		{"same launch", base, upstream.HubOptions{}, upstream.StateLazy},
		{"disabledTools changed", changed(func(sc *config.Server) { sc.DisabledTools = []string{"b"} }), upstream.HubOptions{}, upstream.StateReady},
		{"protocol version changed", changed(func(sc *config.Server) { sc.ProtocolVersion = "2025-06-18" }), upstream.HubOptions{}, upstream.StateReady},
		{"eager", base, upstream.HubOptions{Start: upstream.StartEager}, upstream.StateReady},
		{"memory store", base, upstream.HubOptions{Store: store.NewMemory()}, upstream.StateReady},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if opts.Store == nil {
				opts.Store = dirStore(t, dir)
			}
			hub := startHub(t, &config.Config{Servers: map[string]config.Server{"s": tt.sc}}, &opts, nil)
			st := statusOf(t, hub, "s")
			if st.State != tt.state {
				t.Errorf("state %s, want %s", st.State, tt.state)
			}
			if (st.State == upstream.StateLazy) != st.FromCache {
				t.Errorf("FromCache = %v in state %s", st.FromCache, st.State)
			}
			if st.CachedAt.IsZero() {
				t.Errorf("CachedAt is zero in state %s: the entry was not written", st.State)
			}
		})
	}
	// One entry per fingerprint; the memory store wrote none to disk.
	if files := cacheFiles(t, dir); len(files) != 3 {
		t.Errorf("%d cache files, want 3: %v", len(files), files)
	}
}

// TestMemoryStoreKeepsNothing: a Hub over a Memory store writes no file
// (the user's cache folder stays empty), and the next Hub over another
// Memory store starts its servers.
func TestMemoryStoreKeepsNothing(t *testing.T) {
	checkGoroutines(t)
	home := t.TempDir()
	defer upstream.SetUserCacheDir(home)()
	cacheTransports(t)
	var conns atomic.Int32
	cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(newServer("s", nil, "a"), &conns)}}
	for range 2 {
		hub := startHub(t, cfg, &upstream.HubOptions{Store: store.NewMemory()}, nil)
		if st := statusOf(t, hub, "s"); st.State != upstream.StateReady {
			t.Errorf("state %s, want ready (started)", st.State)
		}
		hub.Close()
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2: each Hub starts its server", n)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the user cache folder holds %d entries, want none", len(entries))
	}
}

// TestCacheCorruptEntry: an entry that cannot be trusted is a miss with a
// warning, and is rewritten.
func TestCacheCorruptEntry(t *testing.T) {
	cacheTransports(t)
	dir := t.TempDir()
	var conns atomic.Int32
	cfg := &config.Config{Servers: map[string]config.Server{"s": countedServer(newServer("s", nil, "a", "b"), &conns)}}
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir)}, nil).Close()
	files := cacheFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, data string }{
		{"truncated", string(good[:len(good)/2])},
		{"empty", ""},
		{"not JSON", "\x00\x01garbage"},
		{"other version", strings.Replace(string(good), `"format": 2`, `"format": 99`, 1)},
		{"tampered tool", strings.Replace(string(good), "Tool a of s.", "Tool a of somebody else.", 1)},
		{"other server", strings.Replace(string(good), `"server": "s"`, `"server": "t"`, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			if tt.data == string(good) {
				t.Fatal("the corruption changed nothing")
			}
			if err := os.WriteFile(files[0], []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			var log logBuffer
			hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir), Logger: log.logger()}, nil)
			if st := statusOf(t, hub, "s"); st.State != upstream.StateReady || st.FromCache {
				t.Errorf("state %s (from cache %v), want ready from the server", st.State, st.FromCache)
			}
			if !strings.Contains(log.String(), "cache entry ignored") {
				t.Errorf("no warning logged; log:\n%s", log.String())
			}
			hub.Close()
			if hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, dir)}, nil); statusOf(t, hub, "s").State != upstream.StateLazy {
				t.Errorf("the entry was not rewritten: next hub is %s", statusOf(t, hub, "s").State)
			}
		})
	}
}

// TestCacheNoSecrets: secrets in env, headers, args and the URL (user info
// and query) never reach the cache; only a hash of them does.
func TestCacheNoSecrets(t *testing.T) {
	checkGoroutines(t)
	checkNoChildren(t)
	bin := testServerPath(t)
	secrets := []string{"env-s3cr3t", "header-s3cr3t", "pass-s3cr3t", "query-s3cr3t", "arg-s3cr3t"}
	srv := newServer("web", nil, "search")
	var auth atomic.Value
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization") + " " + r.URL.RawQuery)
		handler.ServeHTTP(w, r)
	}))
	defer web.Close()
	u := strings.Replace(web.URL, "http://", "http://user:pass-s3cr3t@", 1) + "/mcp?token=query-s3cr3t"

	dir := t.TempDir()
	cache := t.TempDir()
	cfg := writeConfig(t, dir, map[string]any{
		"local": map[string]any{"command": bin, "env": map[string]string{"TESTSERVER_VALUE": "env-s3cr3t", "API_KEY": "env-s3cr3t"}},
		"shell": map[string]any{"command": "/bin/sh", "args": []string{"-c", `exec "$0"`, bin, "--token=arg-s3cr3t"}},
		"web":   map[string]any{"url": u, "type": "http", "headers": map[string]string{"X-Api-Key": "header-s3cr3t"}},
	})
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil)
	for _, st := range hub.Status() {
		if st.State != upstream.StateReady {
			t.Fatalf("%s: %s: %v\n%s", st.Name, st.State, st.Err, st.Stderr)
		}
	}
	if res, err := hub.Call(context.Background(), "local__where", nil); err != nil || !strings.Contains(res.Content, "env-s3cr3t") {
		t.Fatalf("the secret did not reach the server: %+v, %v", res, err)
	}
	if a, _ := auth.Load().(string); !strings.Contains(a, "Basic") || !strings.Contains(a, "query-s3cr3t") {
		t.Fatalf("the URL's secrets did not reach the server: %q", a)
	}
	hub.Close()

	files := cacheFiles(t, cache)
	if len(files) != 3 {
		t.Fatalf("cache files %v, want 3", files)
	}
	err := filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range append(secrets, "user:") {
			if bytes.Contains(data, []byte(s)) || strings.Contains(p, s) {
				t.Errorf("%s holds %q", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheDefaultDir: without a Store, entries go to the user's cache
// folder, under toolsift/catalog.
func TestCacheDefaultDir(t *testing.T) {
	checkGoroutines(t)
	home := t.TempDir()
	defer upstream.SetUserCacheDir(home)()
	cacheTransports(t)
	startHub(t, &config.Config{Servers: map[string]config.Server{"s": memServer(newServer("s", nil, "a"))}}, nil, nil).Close()
	if files := cacheFiles(t, filepath.Join(home, "toolsift")); len(files) != 1 {
		t.Errorf("cache files under %s: %v, want one", home, files)
	}
}

// writerEnv names the cache folder for TestCacheWriterProcess.
const writerEnv = "TOOLSIFT_TEST_CACHE_WRITER"

// TestCacheWriterProcess is run by TestCacheConcurrentWriters in other
// processes: it rewrites one shared cache entry again and again.
func TestCacheWriterProcess(t *testing.T) {
	dir := os.Getenv(writerEnv)
	if dir == "" {
		t.Skip("run by TestCacheConcurrentWriters")
	}
	cacheTransports(t)
	writeRepeatedly(t, dir, fmt.Sprintf("p%d", os.Getpid()))
}

// writeRepeatedly rewrites the shared entry: each Refresh re-lists and
// writes. Writers list different tools under the same fingerprint, so a
// reader that got parts of two writes would see a broken entry.
func writeRepeatedly(t *testing.T, dir, writer string) {
	srv := newServer("shared", nil, "common", "only_"+writer)
	var conns atomic.Int32
	hub, err := upstream.NewHub(&config.Config{Servers: map[string]config.Server{"shared": countedServer(srv, &conns)}},
		&upstream.HubOptions{Store: dirStore(t, dir), Start: upstream.StartEager})
	if err != nil {
		t.Error(err)
		return
	}
	defer hub.Close()
	ctx := context.Background()
	if err := hub.Connect(ctx, nil); err != nil {
		t.Error(err)
		return
	}
	for range 40 {
		if err := hub.Refresh(ctx); err != nil {
			t.Error(err)
			return
		}
	}
}

// TestCacheConcurrentWriters: Hubs in this process and in two others write
// one entry at the same time while Hubs read it; no reader ever sees a
// broken entry, and no temporary file is left.
func TestCacheConcurrentWriters(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	dir := t.TempDir()
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), writerEnv+"="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		dieWithTest(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, outs = append(procs, cmd), append(outs, &out)
	}
	var writers sync.WaitGroup
	for i := range 2 {
		writers.Go(func() { writeRepeatedly(t, dir, fmt.Sprintf("g%d", i)) })
	}
	done := make(chan struct{})
	go func() {
		writers.Wait()
		for i, cmd := range procs {
			if err := cmd.Wait(); err != nil {
				t.Errorf("writer process: %v\n%s", err, outs[i])
			}
		}
		close(done)
	}()

	var log logBuffer
	reads := 0
	for {
		select {
		case <-done:
		default:
			var conns atomic.Int32
			cfg := &config.Config{Servers: map[string]config.Server{"shared": countedServer(newServer("shared", nil, "common"), &conns)}}
			// A reader that finds no entry yet connects and writes too.
			hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: dirStore(t, dir), Logger: log.logger()})
			if err != nil {
				t.Fatal(err)
			}
			if err := hub.Connect(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if statusOf(t, hub, "shared").State == upstream.StateLazy {
				reads++
			}
			hub.Close()
			continue
		}
		break
	}
	if s := log.String(); s != "" {
		t.Errorf("readers logged warnings:\n%s", s)
	}
	if reads == 0 {
		t.Error("no reader found an entry")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "catalog"))
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("cache folder holds %v, want one entry", names)
	}
	t.Logf("%d lazy reads", reads)
}

func TestNewHubRejectsStartMode(t *testing.T) {
	if _, err := upstream.NewHub(nil, &upstream.HubOptions{Start: 7}); !errors.Is(err, upstream.ErrOptions) {
		t.Errorf("NewHub error = %v, want ErrOptions", err)
	}
}

// TestCacheStaleTempFiles: a temporary file left by a writer that died is
// removed once it is old, and a recent one (a write under way) is not.
func TestCacheStaleTempFiles(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	dir := t.TempDir()
	catalog := filepath.Join(dir, "catalog")
	if err := os.MkdirAll(catalog, 0o700); err != nil {
		t.Fatal(err)
	}
	old, recent := filepath.Join(catalog, ".tmp-old"), filepath.Join(catalog, ".tmp-recent")
	for _, f := range []string{old, recent} {
		if err := os.WriteFile(f, []byte(`{"form`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	startHub(t, &config.Config{Servers: map[string]config.Server{"s": memServer(newServer("s", nil, "a"))}}, &upstream.HubOptions{Store: dirStore(t, dir)}, nil)
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old temporary file: %v, want it removed", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("recent temporary file: %v, want it kept", err)
	}
}

// TestDefaultStore: the store a Hub keeps its cache in unless told
// otherwise, which toolsift uses for what it derives from tool lists.
func TestDefaultStore(t *testing.T) {
	home := t.TempDir()
	restore := upstream.SetUserCacheDir(home)
	d, err := upstream.DefaultStore()
	restore()
	if err != nil || d.Path() != filepath.Join(home, "toolsift") {
		t.Fatalf("DefaultStore() = %v, %v; want the folder %s", d, err, filepath.Join(home, "toolsift"))
	}
	// Tests have no user cache folder: a Hub warns and keeps nothing.
	if _, err := upstream.DefaultStore(); err == nil {
		t.Fatal("DefaultStore() without a user cache folder: no error")
	}
	var log logBuffer
	hub := startHub(t, nil, &upstream.HubOptions{Logger: log.logger()}, nil)
	hub.Close()
	if !strings.Contains(log.String(), "no cache folder") {
		t.Errorf("no warning of the missing cache folder; log:\n%s", log.String())
	}
}

// TestCachedToolsKeepVerifiedHints: a lazy server's cached tools are
// verified against their trust records as a listing is: a tool that matches
// its record keeps its readOnlyHint, so the server's first listing changes
// nothing (a proxy would otherwise list the tool anew); one whose cache
// entry claims a readOnlyHint its record lacks does not get it.
func TestCachedToolsKeepVerifiedHints(t *testing.T) {
	checkGoroutines(t)
	cacheTransports(t)
	cache := t.TempDir()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	for name, readOnly := range map[string]bool{"ro": true, "rw": false} {
		srv.AddTool(&mcp.Tool{Name: name, Description: "Tool " + name + ".", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, OpenWorldHint: new(false)}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	cfg := &config.Config{Servers: map[string]config.Server{"s": memServer(srv)}}
	startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil).Close()
	readOnly := func(hub *upstream.Hub) map[string]bool {
		out := map[string]bool{}
		for _, tl := range hub.Tools() {
			out[tl.Name] = tl.Annotations != nil && tl.Annotations.ReadOnlyHint != nil && *tl.Annotations.ReadOnlyHint
		}
		return out
	}

	got := make(changes, 16)
	hub := startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, got.onChange)
	got.next(t) // the cached tools
	want := map[string]bool{"s__ro": true, "s__rw": false}
	if diff := cmp.Diff(want, readOnly(hub)); diff != "" {
		t.Errorf("readOnlyHint of the cached tools (-want +got):\n%s", diff)
	}
	if _, err := hub.Call(context.Background(), "s__ro", nil); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, hub, "s"); st.State != upstream.StateReady {
		t.Fatalf("state %s after a call, want ready", st.State)
	}
	select {
	case ch := <-got:
		t.Errorf("the server's first listing changed %+v, want nothing", summarize(ch))
	default:
	}
	hub.Close()

	// The cache entry now says rw is read-only; its trust record does not.
	files := cacheFiles(t, cache)
	if len(files) != 1 {
		t.Fatalf("cache entries %q, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	if err := json.Unmarshal(data, &entry); err != nil {
		t.Fatal(err)
	}
	for _, tl := range entry["tools"].([]any) {
		if m := tl.(map[string]any); m["name"] == "s__rw" {
			m["annotations"] = map[string]any{"readOnlyHint": true, "openWorldHint": false}
		}
	}
	if data, err = json.Marshal(entry); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	hub = startHub(t, cfg, &upstream.HubOptions{Store: dirStore(t, cache)}, nil)
	if st := statusOf(t, hub, "s"); st.State != upstream.StateLazy || !st.FromCache {
		t.Fatalf("status %+v, want lazy from the cache", st)
	}
	if diff := cmp.Diff(want, readOnly(hub)); diff != "" {
		t.Errorf("readOnlyHint of the tampered cached tools (-want +got):\n%s", diff)
	}
}
