package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamGateEnv, set beside upstreamEnv, names a FIFO: the upstream
// answers its first tools/list only once it can open it for reading, that
// is once the test opens it for writing. A server slow to list, released
// by the test.
const upstreamGateEnv = "TOOLSIFT_TEST_UPSTREAM_GATE"

// gateToolsList holds srv's first tools/list until the FIFO of
// upstreamGateEnv opens, when that is set.
func gateToolsList(srv *mcp.Server) {
	gate := os.Getenv(upstreamGateEnv)
	if gate == "" {
		return
	}
	var once sync.Once
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				once.Do(func() {
					if f, err := os.Open(gate); err == nil {
						f.Close()
					}
				})
			}
			return next(ctx, method, req)
		}
	})
}

// logWatch is serve's log; wrote hears of each write.
type logWatch struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// waitFor waits until the log holds want, or limit.
func (w *logWatch) waitFor(t *testing.T, want string, limit <-chan struct{}) {
	t.Helper()
	for !strings.Contains(w.String(), want) {
		select {
		case <-w.wrote:
		case <-limit:
			t.Fatalf("serve never logged %s\n%s", want, w.String())
		}
	}
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// listedNames returns the names of the tools cs's tools/list answers.
func listedNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}
