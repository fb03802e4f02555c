package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// ttlServer answers tools/list with the tools named in *names and ttlMs,
// and never says its list changed: only its ttlMs tells a client to list
// again.
func ttlServer(mu *sync.Mutex, names *[]string, ttlMs int) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ttl", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			mu.Lock()
			defer mu.Unlock()
			res := &mcp.ListToolsResult{Cacheable: mcp.Cacheable{TTLMs: ttlMs}}
			for _, n := range *names {
				res.Tools = append(res.Tools, &mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
			}
			return res, nil
		}
	})
	return srv
}

// TestFreshen: a server's ttlMs is its tool list's freshness: Freshen
// lists again a server whose list has outlived it, and leaves alone one
// whose list is fresh or that gave no ttlMs. On the bubble's clock, so
// that "outlived" is exact.
func TestFreshen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		short, long, none := []string{"a"}, []string{"a"}, []string{"a"}
		hub := startHub(t, &config.Config{Servers: map[string]config.Server{
			"short": memServer(ttlServer(&mu, &short, 1)),
			"long":  memServer(ttlServer(&mu, &long, 3_600_000)),
			"none":  memServer(ttlServer(&mu, &none, 0)),
		}}, &upstream.HubOptions{ProtocolVersion: "latest", Store: store.NewMemory()}, nil)
		// Fresh a moment ago (Freshen keeps until when): still looked at again.
		if err := hub.Freshen(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		short, long, none = []string{"a", "b"}, []string{"a", "b"}, []string{"a", "b"}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // past short's ttlMs of 1
		if err := hub.Freshen(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, tl := range hub.Tools() {
			got[tl.Name] = true
		}
		if !got["short__b"] || got["long__b"] || got["none__b"] {
			t.Fatalf("tools %v: want short__b listed again (its ttlMs passed), and the lists of long (fresh for an hour) and none (no ttlMs) as they were", got)
		}
	})
}

// BenchmarkFreshen is what a proxy's search_tools and tools/list pay to
// know that no tool list outlived its ttlMs: 40 servers, one of them with
// a ttlMs of an hour.
func BenchmarkFreshen(b *testing.B) {
	var mu sync.Mutex
	tools := []string{"a"}
	servers := map[string]config.Server{"long": memServer(ttlServer(&mu, &tools, 3_600_000))}
	for i := range 39 {
		servers[fmt.Sprintf("s%d", i)] = memServer(ttlServer(&mu, &tools, 0))
	}
	hub := startHub(b, &config.Config{Servers: servers}, &upstream.HubOptions{ProtocolVersion: "latest", Store: store.NewMemory()}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := hub.Freshen(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
