package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/upstream"
)

// bigResultServer is an upstream whose tool big returns a text block of
// size bytes (words, with quotes and newlines that JSON escapes).
func bigResultServer(size int) config.Server {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog, again and again, in the \"big\" text of a tool result\n", size/90+1)[:size]
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "big", Description: "Return a big text.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	return dialed(up)
}

// BenchmarkLargeResult is one call of a tool whose result is 15 MiB of
// text, through the proxy over streamable HTTP, read by a raw HTTP client
// (which keeps nothing). B/op counts every copy this process makes: the
// upstream server's encoding (in process here), the Hub's, the proxy's and
// the HTTP answer's; copies/op is B/op over the result's size.
func BenchmarkLargeResult(b *testing.B) {
	const size = 15 << 20
	ts, hub := openToolset(&testing.T{}, &config.Config{Servers: map[string]config.Server{"up": bigResultServer(size)}})
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(nil))
	defer srv.Close()
	send := func(session, body string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var sb strings.Builder
		n, _ := io.Copy(&sb, io.LimitReader(resp.Body, 300))
		m, _ := io.Copy(io.Discard, resp.Body)
		n += m
		resp.Body.Close()
		if resp.StatusCode/100 != 2 || (strings.Contains(body, "tools/call") && n < size) {
			b.Fatalf("%s: %s, %d bytes: %s", body, resp.Status, n, sb.String())
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	id := send("", initBody)
	send(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"up__big"}}}`
	send(id, call)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		send(id, call)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/size, "copies/op")
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for l := range strings.SplitSeq(string(status), "\n") {
			if kb, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				var n float64
				fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), &n)
				b.ReportMetric(n/1024, "peak-RSS-MiB")
			}
		}
	}
}

// TestResultBytesBound: a result larger than MaxResultBytes is refused,
// naming the limit, and only that call: a small one of the same session
// still works; concurrent results that together exceed the bound wait
// for each other and all arrive (the bytes are given back once each
// answer is written).
func TestResultBytesBound(t *testing.T) {
	sized := func(n int) func(context.Context, json.RawMessage) (string, error) {
		return func(context.Context, json.RawMessage) (string, error) { return strings.Repeat("x", n), nil }
	}
	up, err := upstream.LocalServer(
		upstream.LocalTool{Name: "huge", Description: "A huge result.", Handler: sized(200_000)},
		upstream.LocalTool{Name: "medium", Description: "A medium result.", Handler: sized(60_000)},
		upstream.LocalTool{Name: "small", Description: "A small result.", Handler: sized(2)},
	)
	if err != nil {
		t.Fatal(err)
	}
	ts, hub := openToolset(t, &config.Config{Servers: map[string]config.Server{"up": up}})
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Limits: gateway.Limits{MaxResultBytes: 100_000}})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, p.NewServer(), "")
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "up__huge"}); !isErr || !strings.Contains(text, "over the limit of 100000 bytes of results in flight") || !strings.Contains(text, "--max-result-bytes") {
		t.Errorf("a result over the bound: %.200q (isError %v), want it refused naming the limit", text, isErr)
	}
	if text, isErr := c.call(t, "call_tool", map[string]any{"name": "up__small"}); isErr || text != "xx" {
		t.Errorf("a small result after: %q (isError %v)", text, isErr)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "up__medium"}})
			switch {
			case err != nil:
				errs <- err.Error()
			case res.IsError || len(res.Content[0].(*mcp.TextContent).Text) != 60_000:
				errs <- "a medium result came back wrong"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
