//lint:file-ignore SA1019 roots are deprecated by MCP 2026-07-28, but servers such as server-filesystem still ask for them.

package gateway_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift"
	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// TestQuietLog: what is routine logs nothing at the default level: a
// server asking for roots as it starts (server-filesystem does; no client
// call is in flight to ask), and a successful read says no "error=<nil>".
// At debug level the declined request is still there.
func TestQuietLog(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			asked := make(chan error, 1)
			up := mcp.NewServer(&mcp.Implementation{Name: "fs", Version: "1"}, &mcp.ServerOptions{
				InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
					_, err := req.Session.ListRoots(ctx, nil)
					asked <- err
				},
			})
			up.AddResource(&mcp.Resource{URI: "test://readme", Name: "readme", MIMEType: "text/plain"},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://readme", Text: "hello"}}}, nil
				})
			cfg := &config.Config{Servers: map[string]config.Server{"fs": dialed(up)}}
			var buf testenv.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
			ts, hub := openHubToolset(t, cfg, upstream.HubOptions{ClientRequests: gateway.NewClientRequests(log, 0), Logger: log},
				toolsift.Options{NoSemantic: true, Logger: log})
			select {
			case err := <-asked:
				if err == nil || !strings.Contains(err.Error(), "declined") {
					t.Errorf("roots/list at start: %v, want it declined", err)
				}
			case <-time.After(testenv.WaitLimit()):
				t.Fatal("the server never asked for roots")
			}
			p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Telemetry: gateway.Telemetry{Logger: log}})
			if err != nil {
				t.Fatal(err)
			}
			c := connect(t, p.NewServer(), "")
			if _, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://readme"}); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if !strings.Contains(got, "read resource") {
				t.Errorf("log lacks the read:\n%s", got)
			}
			if strings.Contains(got, "<nil>") {
				t.Errorf("log says <nil>:\n%s", got)
			}
			declined := 0
			for _, line := range strings.Split(got, "\n") {
				if strings.Contains(line, "roots/list") {
					declined++
				}
			}
			if want := map[slog.Level]int{slog.LevelInfo: 0, slog.LevelDebug: 2}[level]; declined != want {
				t.Errorf("%d lines about the declined roots/list at level %s, want %d:\n%s", declined, level, want, got)
			}
		})
	}
}
