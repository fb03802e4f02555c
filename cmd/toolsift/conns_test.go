package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/testenv"
)

// TestServeMaxConnsPerHost: serve --max-conns-per-host caps the
// connections of one host (127.0.0.2 here, whose headers never end): its
// next one is answered 503 naming the flag, while another host's request
// is served.
func TestServeMaxConnsPerHost(t *testing.T) {
	config := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log testenv.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &log, stderr: &log, getenv: func(string) string { return "" }}
	addr, done := startServe(ctx, t, e, &log, "serve", "--config", config, "--no-cache", "--listen", "127.0.0.1:0", "--max-conns", "16", "--max-conns-per-host", "2")
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetReadDeadline(time.Now().Add(testenv.WaitLimit()))
		return c
	}
	var slow []net.Conn
	for range 2 {
		c := dial("127.0.0.2")
		fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		slow = append(slow, c)
	}
	third := dial("127.0.0.2")
	fmt.Fprintf(third, "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("127.0.0.2's third connection: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if want := "too many connections from 127.0.0.2: toolsift serve keeps at most 2 open per host (--max-conns-per-host)"; resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), want) {
		t.Errorf("127.0.0.2's third connection: %s %q, want 503 saying %q", resp.Status, b, want)
	}
	other := dial("127.0.0.3")
	fmt.Fprintf(other, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")
	resp, err = http.ReadResponse(bufio.NewReader(other), nil)
	if err != nil {
		t.Fatalf("127.0.0.3's request: %v", err)
	}
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusServiceUnavailable {
		t.Errorf("127.0.0.3's request: %s %q, want it served", resp.Status, b)
	}
	for _, c := range slow {
		c.Close() // else serve's shutdown waits for them
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d:\n%s", code, log.String())
	}
}
