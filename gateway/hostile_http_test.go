package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/internal/testenv"
	"github.com/toolsift/toolsift/upstream"
)

// A hostile client of toolsift serve --listen, written as raw HTTP: what it
// may do to the sessions of others and to the server's resources.

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one JSON-RPC message and returns the response (body read).
func post(t *testing.T, url, session, auth, origin, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// open initializes a session and returns its id.
func open(t *testing.T, url, auth string) string {
	t.Helper()
	resp, body := post(t, url, "", auth, "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %s %q, session %q", resp.Status, body, id)
	}
	if resp, body := post(t, url, id, auth, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode/100 != 2 {
		t.Fatalf("initialized: %s %q", resp.Status, body)
	}
	return id
}

const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestSessionBoundToCredential: a session id used with another credential
// than the one that opened it is refused; with its own, it is served.
func TestSessionBoundToCredential(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(nil))
	defer srv.Close()
	id := open(t, srv.URL, "Bearer alice")
	if resp, body := post(t, srv.URL, id, "Bearer mallory", "", listBody); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "another credential") {
		t.Errorf("tools/list with another credential: %s %q, want 403", resp.Status, body)
	}
	if resp, body := post(t, srv.URL, id, "", "", listBody); resp.StatusCode != http.StatusForbidden {
		t.Errorf("tools/list without a credential: %s %q, want 403", resp.Status, body)
	}
	if resp, body := post(t, srv.URL, id, "Bearer alice", "", listBody); resp.StatusCode != http.StatusOK || !strings.Contains(body, "search_tools") {
		t.Errorf("tools/list with the session's credential: %s %q", resp.Status, body)
	}
}

// TestSessionIDNeverLogged: searches and calls over HTTP log a tag of the
// session, never its id.
func TestSessionIDNeverLogged(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	var buf testenv.Buffer
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Telemetry: gateway.Telemetry{Logger: slog.New(slog.NewTextHandler(&buf, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(nil))
	defer srv.Close()
	cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	c := &client{ClientSession: cs}
	c.search(t, "add two numbers", 1)
	c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 1, "b": 2}})
	log := buf.String()
	if !strings.Contains(log, "msg=call") || !strings.Contains(log, "session=") {
		t.Fatalf("log = %s: want the call and a session tag", log)
	}
	if strings.Contains(log, cs.ID()) {
		t.Errorf("the log holds the session id %s:\n%s", cs.ID(), log)
	}
}

// TestSessionCap: past MaxSessions the session idle longest is closed
// (404 to its client, who starts anew), and the open sessions stay at the
// cap.
func TestSessionCap(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{MaxSessions: 3}))
	defer srv.Close()
	var ids []string
	for range 5 {
		ids = append(ids, open(t, srv.URL, ""))
	}
	for i, id := range ids {
		resp, body := post(t, srv.URL, id, "", "", listBody)
		want := http.StatusOK
		if i < 2 {
			want = http.StatusNotFound
		}
		if resp.StatusCode != want {
			t.Errorf("session %d of 5 (cap 3): %s %q, want %d", i+1, resp.Status, body, want)
		}
	}
}

// TestSessionCapRefusesWhenAllBusy: when every session has a request in
// flight, a new one is refused with 503 naming the cap, and the busy
// sessions are untouched.
func TestSessionCapRefusesWhenAllBusy(t *testing.T) {
	ts, hub := openToolset(t, slowTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{MaxSessions: 1}))
	defer srv.Close()
	id := open(t, srv.URL, "")
	done := make(chan string)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"slow__wait"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- resp.Status + " " + string(b)
	}()
	<-slowStarted
	resp, body := post(t, srv.URL, "", "", "", initBody)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "too many sessions") || !strings.Contains(body, "--max-sessions") {
		t.Errorf("a new session while the only one is busy: %s %q, want 503 naming the cap", resp.Status, body)
	}
	close(slowRelease)
	if got := <-done; !strings.Contains(got, "200 OK") || !strings.Contains(got, "waited") {
		t.Errorf("the busy session's call: %s", got)
	}
}

// TestOrigin: a request whose Origin is neither loopback, nor the server's
// host, nor allowed, is refused with 403 before anything else.
func TestOrigin(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{AllowedOrigins: []string{"https://app.example"}}))
	defer srv.Close()
	for origin, want := range map[string]int{
		"https://evil.example":                   http.StatusForbidden,
		"null":                                   http.StatusForbidden,
		"http://localhost.evil:80":               http.StatusForbidden,
		"http://localhost:3000":                  http.StatusOK,
		"http://127.0.0.1:9":                     http.StatusOK,
		"http://[::1]:9":                         http.StatusOK,
		"https://app.example":                    http.StatusOK,
		"http://" + srv.Listener.Addr().String(): http.StatusOK,
	} {
		resp, body := post(t, srv.URL, "", "", origin, initBody)
		if resp.StatusCode != want {
			t.Errorf("Origin %s: %s %q, want %d", origin, resp.Status, body, want)
		}
		if want == http.StatusForbidden && !strings.Contains(body, "Origin") {
			t.Errorf("Origin %s: body %q does not say why", origin, body)
		}
	}
}

// TestTricklingBody: a body that never finishes arriving is answered 408
// once BodyTimeout passes, and its connection closed, instead of being
// held for ever.
func TestTricklingBody(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	p, err := gateway.NewProxy(ts, hub, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler(&gateway.HTTPOptions{BodyTimeout: 100 * time.Millisecond}))
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", srv.Listener.Addr())
	// Generous: the server answers after 100ms; a server without the
	// deadline never answers.
	_ = c.SetReadDeadline(time.Now().Add(testenv.WaitLimit()))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "BodyTimeout") {
		t.Errorf("trickling body: %s %q, want 408 naming BodyTimeout", resp.Status, b)
	}
}

// TestLimitListener: past the cap, a connection is answered 503 naming
// the limit; a connection closed makes room again.
func TestLimitListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(gateway.LimitListener(raw, 2, 0))
	defer srv.Close()
	addr := raw.Addr().String()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // a keep-alive held open
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("connection within the cap: %v %v", resp, err)
		}
		held = append(held, c)
	}
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	fmt.Fprintf(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = third.SetReadDeadline(time.Now().Add(testenv.WaitLimit()))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("third connection: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "--max-conns") {
		t.Errorf("third connection: %s %q, want 503 naming --max-conns", resp.Status, b)
	}
	held[0].Close()
	for deadline := time.Now().Add(testenv.WaitLimit()); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get("http://" + addr)
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection never made room")
		}
	}
}

var (
	slowStarted = make(chan struct{}, 1)
	slowRelease = make(chan struct{})
)

// slowTools is a server whose one tool, wait, blocks until slowRelease is
// closed.
func slowTools(t *testing.T) *config.Config {
	t.Helper()
	slow, err := upstream.LocalServer(upstream.LocalTool{Name: "wait", Description: "Wait until released.", Handler: func(ctx context.Context, _ json.RawMessage) (string, error) {
		select {
		case slowStarted <- struct{}{}:
		default:
		}
		select {
		case <-slowRelease:
			return "waited", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &config.Config{Servers: map[string]config.Server{"slow": slow}}
}
