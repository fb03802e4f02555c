package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

// BenchmarkQuarantine is what a search, a call and a tools/list pay to know
// the quarantined tools, over 73 in-process servers of 30 tools (the size
// of the 73-server catalog): read from the Hub's status at each request
// (read) or kept while the catalog's generation and the trust epoch stand
// (cached). In-process servers have no stderr; a stdio server's status also
// copies its stderr tail (up to 4 KiB), so read costs more there.
func BenchmarkQuarantine(b *testing.B) {
	ts, hub := catalog73(b, func(s, i int) string { return fmt.Sprintf("Tool %d of server %d.", i, s) })
	p, err := newProxy(ts, hub, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.readQuarantine()
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.quarantine()
		}
	})
}

// catalog73 is a Toolset over 73 in-process servers (s0…s72) of 30 tools
// each (tool_0…tool_29), the size of the 73-server catalog; desc gives
// tool i of server s its description.
func catalog73(b *testing.B, desc func(s, i int) string) (*toolsift.Toolset, *upstream.Hub) {
	b.Helper()
	cfg := &config.Config{Servers: map[string]config.Server{}}
	for s := range 73 {
		var tools []upstream.LocalTool
		for i := range 30 {
			tools = append(tools, upstream.LocalTool{Name: fmt.Sprintf("tool_%d", i), Description: desc(s, i),
				Handler: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }})
		}
		srv, err := upstream.LocalServer(tools...)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Servers[fmt.Sprintf("s%d", s)] = srv
	}
	return openHub(b, cfg)
}
