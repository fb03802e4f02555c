package upstream_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// TestCloseDuringRelistIsQuiet: a re-list of tools that Close cancels is
// not a failure to warn about.
func TestCloseDuringRelistIsQuiet(t *testing.T) {
	checkGoroutines(t)
	srv := newServer("s", nil, "a")
	var lists atomic.Int32
	blocked := make(chan struct{})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && lists.Add(1) > 1 {
				close(blocked) // the re-list: held until the client gives up
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return next(ctx, method, req)
		}
	})
	var log logBuffer
	hub, err := upstream.NewHub(&config.Config{Servers: map[string]config.Server{"s": memServer(srv)}},
		&upstream.HubOptions{Store: store.NewMemory(), Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	addTextTool(srv, "b", "Tool b.", "s:b") // tools/list_changed: the Hub re-lists
	select {
	case <-blocked:
	case <-time.After(waitLimit()):
		t.Fatal("the Hub never re-listed")
	}
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); strings.Contains(got, "level=WARN") {
		t.Errorf("Close during a re-list warned:\n%s", got)
	}
}
