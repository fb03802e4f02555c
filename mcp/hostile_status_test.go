package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/mcp"
)

// failingHTTP is a real MCP server (the SDK's streamable or SSE handler)
// that answers one thing with an HTTP error instead: the POST of a
// JSON-RPC method, or ("GET") the event stream.
func failingHTTP(t *testing.T, sse bool, fail string, status int) *httptest.Server {
	t.Helper()
	srv := newServer("remote", nil, "echo")
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	if sse {
		h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && fail == "GET" {
			http.Error(w, "no", status)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(body, &m)
			if m.Method == fail {
				w.Header().Set("Www-Authenticate", `Bearer realm="x"`)
				http.Error(w, "failing on purpose", status)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestHTTPStatusKept: an HTTP error from a url server, to initialize,
// tools/list or tools/call, says its status code, method and URL (the
// SDK's errors keep only the status text), with a hint for 404 to
// initialize and for 401/403; no configured header value is printed.
func TestHTTPStatusKept(t *testing.T) {
	const secret = "s3cret-header-value"
	for _, tc := range []struct {
		sse    bool
		fail   string
		status int
		hint   string
	}{
		{false, "initialize", 500, ""},
		{false, "initialize", 404, "is the server's url right?"},
		{false, "initialize", 401, "the server wants credentials"},
		{false, "initialize", 403, "the server wants credentials"},
		{false, "tools/list", 502, ""},
		{false, "tools/list", 503, ""},
		{false, "tools/call", 500, ""},
		{false, "tools/call", 503, ""},
		{false, "tools/call", 401, "the server wants credentials"},
		{true, "GET", 500, ""},
		{true, "GET", 404, "is the server's url right?"},
		{true, "initialize", 500, ""},
		{true, "tools/list", 500, ""},
		{true, "tools/call", 403, "the server wants credentials"},
	} {
		typ := "http"
		if tc.sse {
			typ = "sse"
		}
		t.Run(fmt.Sprintf("%s/%s/%d", typ, tc.fail, tc.status), func(t *testing.T) {
			checkGoroutines(t)
			ts := failingHTTP(t, tc.sse, tc.fail, tc.status)
			sc := config.Server{URL: ts.URL + "/mcp?key=" + secret, Type: typ, Headers: map[string]string{"Authorization": "Bearer " + secret}}
			st, _ := hostileHub(t, sc, &mcp.HubOptions{Timeout: 20 * time.Second})
			method := http.MethodPost
			if tc.fail == "GET" {
				method = http.MethodGet
			}
			// (an SSE server's POSTs go to its endpoint, with a session id, redacted)
			want := fmt.Sprintf("HTTP %d %s from %s %s/mcp?", tc.status, http.StatusText(tc.status), method, ts.URL)
			var err error
			if tc.fail == "tools/call" {
				if st.State != mcp.StateReady {
					t.Fatalf("state %s (%v), want ready", st.State, st.Err)
				}
			} else {
				if st.State != mcp.StateFailed {
					t.Fatalf("state %s, want failed", st.State)
				}
				err = st.Err
			}
			if tc.fail == "tools/call" {
				// hostileHub's Hub is closed; call on a fresh one.
				cfg := &config.Config{Servers: map[string]config.Server{"evil": sc}}
				hub := startHub(t, cfg, &mcp.HubOptions{NoCache: true, MaxRestarts: -1})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_, err = hub.Call(ctx, "evil__echo", nil)
			}
			msg := fmt.Sprint(err)
			if !strings.Contains(msg, want) || !strings.Contains(msg, "evil") || !strings.Contains(msg, tc.hint) || strings.Contains(msg, secret) {
				t.Fatalf("error %q: want %q, the server, hint %q, no secret", msg, want, tc.hint)
			}
			t.Logf("%s", msg)
		})
	}
}
