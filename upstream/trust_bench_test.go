package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// BenchmarkReloadTrust is what toolsift serve pays before each request to
// learn whether another process (toolbench trust) accepted a tool: 73
// in-process servers of 30 tools (the size of the 73-server catalog), all
// with trust records, none changed.
func BenchmarkReloadTrust(b *testing.B) {
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for s := range 73 {
		var tools []upstream.LocalTool
		for i := range 30 {
			tools = append(tools, upstream.LocalTool{Name: fmt.Sprintf("tool_%d", i), Description: fmt.Sprintf("Tool %d of server %d.", i, s),
				Handler: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }})
		}
		srv, err := upstream.LocalServer(tools...)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Servers[fmt.Sprintf("s%d", s)] = srv
	}
	ctx := context.Background()
	hub, err := upstream.NewHub(cfg, &upstream.HubOptions{Store: dirStore(b, b.TempDir()), Start: upstream.StartEager})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { hub.Close() })
	if err := hub.Connect(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := hub.ReloadTrust(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if names, err := hub.ReloadTrust(ctx); err != nil || len(names) != 0 {
			b.Fatalf("ReloadTrust with nothing changed: %v, %v", names, err)
		}
	}
}
