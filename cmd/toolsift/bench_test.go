package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/npmtest"
)

// The benchmarks run against the pinned reference servers, or against the
// config in $TOOLSIFT_BENCH_CONFIG (with the cache in
// $TOOLSIFT_BENCH_CACHE_DIR) (such as the 73-server catalog's
// servers.json; its servers start in the config's folder). The call
// benchmarks call everything's get-sum, so the config needs the "everything"
// reference server.
func benchConfig(b *testing.B) (config string, everything []string) {
	dir := npmtest.Dir(b, "../../upstream/testdata/npm")
	if c := os.Getenv("TOOLSIFT_BENCH_CONFIG"); c != "" {
		abs, err := filepath.Abs(c)
		if err != nil {
			b.Fatal(err)
		}
		return abs, []string{"node", filepath.Join(filepath.Dir(abs), "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}
	}
	everything = []string{"node", npmtest.Entry(dir, "server-everything"), "stdio"}
	servers := map[string]any{
		"everything": map[string]any{"command": everything[0], "args": everything[1:]},
		"memory":     map[string]any{"command": "node", "args": []string{npmtest.Entry(dir, "server-memory")}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(b.TempDir(), "m.jsonl")}},
		"filesystem": map[string]any{"command": "node", "args": []string{npmtest.Entry(dir, "server-filesystem"), b.TempDir()}},
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		b.Fatal(err)
	}
	config = filepath.Join(b.TempDir(), "mcp.json")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return config, everything
}

func benchGateway(b *testing.B, path string) *gateway.Gateway {
	b.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	// $TOOLSIFT_BENCH_CACHE_DIR: a warm cache, so that lazy servers stay
	// unstarted as in a warm toolsift serve.
	gw, err := gateway.Open(context.Background(), cfg, &gateway.Options{
		Toolset: toolsift.Options{Store: storeIn(b, os.Getenv("TOOLSIFT_BENCH_CACHE_DIR"))}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { gw.Close() })
	return gw
}

func benchClient(b testing.TB, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	var opts *mcp.ClientSessionOptions
	if _, ok := t.(*mcp.StreamableClientTransport); ok {
		// A session over HTTP, as the benchmarks measured before serve
		// answered 2026-07-28 clients without one.
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), t, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func benchCall(b *testing.B, cs *mcp.ClientSession, name string, args any) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", name, err, res)
	}
}

// BenchmarkCall is one tools/call of everything's get-sum: straight to the
// server over stdio (direct), through the proxy in memory (proxy-memory, a
// go-sdk client in this process) and over streamable HTTP on loopback
// (proxy-http). proxy minus direct is what the proxy adds.
func BenchmarkCall(b *testing.B) {
	config, everything := benchConfig(b)
	args := map[string]any{"a": 17, "b": 25}
	b.Run("direct", func(b *testing.B) {
		cmd := exec.Command(everything[0], everything[1:]...)
		cmd.Dir = filepath.Dir(config)
		cs := benchClient(b, &mcp.CommandTransport{Command: cmd})
		benchCall(b, cs, "get-sum", args)
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, cs, "get-sum", args)
		}
	})
	gw := benchGateway(b, config)
	b.Run("proxy-memory", func(b *testing.B) {
		// A session over a pair of pipes, as stdio.
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- gw.ServeStdio(ctx, sr, sw) }()
		b.Cleanup(func() { cancel(); cw.Close(); <-done })
		cs := benchClient(b, &mcp.IOTransport{Reader: cr, Writer: cw})
		call := map[string]any{"name": "everything__get-sum", "arguments": args}
		benchCall(b, cs, "call_tool", call) // starts the server if lazy
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, cs, "call_tool", call)
		}
	})
	b.Run("proxy-http", func(b *testing.B) {
		srv := httptest.NewServer(authn.Require(authn.SharedToken("t"), nil)(gw.Handler()))
		b.Cleanup(srv.Close)
		hc := srv.Client()
		hc.Transport = bearer{"t", hc.Transport}
		cs := benchClient(b, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc})
		call := map[string]any{"name": "everything__get-sum", "arguments": args}
		benchCall(b, cs, "call_tool", call)
		b.ReportAllocs()
		for b.Loop() {
			benchCall(b, cs, "call_tool", call)
		}
	})
}

// BenchmarkSearchConcurrent is search_tools with 8 HTTP clients at once,
// each with its own session, over the queries of
// benchmarks/testdata/catalog_queries.jsonl; it reports the p50 and p99 of
// one search as a client sees it.
func BenchmarkSearchConcurrent(b *testing.B) {
	config, _ := benchConfig(b)
	gw := benchGateway(b, config)
	queries := catalogQueries(b)
	srv := httptest.NewServer(authn.Require(authn.SharedToken("t"), nil)(gw.Handler()))
	b.Cleanup(srv.Close)
	const clients = 8
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		hc := srv.Client()
		hc.Transport = bearer{"t", hc.Transport}
		sessions[i] = benchClient(b, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc})
	}
	var mu sync.Mutex
	var took []time.Duration
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for i, cs := range sessions {
			q := queries[(n*clients+i)%len(queries)]
			wg.Go(func() {
				start := time.Now()
				benchCall(b, cs, "search_tools", map[string]any{"query": q})
				d := time.Since(start)
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
			})
		}
		wg.Wait()
		n++
	}
	slices.Sort(took)
	at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(float64(len(gw.Toolset().Tools())), "tools")
}

func catalogQueries(b *testing.B) []string {
	data, err := os.ReadFile("../../benchmarks/testdata/catalog_queries.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for line := range bytes.Lines(data) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(line, &q); err != nil {
			b.Fatal(err)
		}
		out = append(out, q.Query)
	}
	if len(out) == 0 {
		b.Fatal("no queries")
	}
	return out
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}
