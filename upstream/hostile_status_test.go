package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// failingHTTP is a real MCP server (the SDK's streamable or SSE handler,
// with a tool, a resource and a prompt) that answers one thing with an
// HTTP error instead: the POST of a JSON-RPC method, or ("GET") the event
// stream. With rpcBody, the error's body is a JSON-RPC error answering the
// request.
func failingHTTP(t *testing.T, sse bool, fail string, status int, rpcBody bool) *httptest.Server {
	t.Helper()
	srv := newServer("remote", nil, "echo")
	srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://doc", Text: "doc"}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "pick"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "pick"}}}}, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if sse {
		h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && fail == "GET" {
			http.Error(w, "no", status)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &m)
			if m.Method == fail {
				w.Header().Set("Www-Authenticate", `Bearer realm="x"`)
				if rpcBody {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"failing on purpose"}}`, m.ID)
					return
				}
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
// tools/list, tools/call, resources/read or prompts/get, says its status
// code, method and URL (the SDK's errors keep only the status text), with
// a hint for 404 to initialize and for 401/403; no configured header
// value is printed.
func TestHTTPStatusKept(t *testing.T) {
	const secret = "s3cret-header-value"
	for _, tc := range []struct {
		sse    bool
		fail   string
		status int
		hint   string
	}{
		{false, "resources/read", 500, ""},
		{false, "resources/read", 401, "the server wants credentials"},
		{false, "prompts/get", 503, ""},
		{true, "resources/read", 502, ""},
		{true, "prompts/get", 403, "the server wants credentials"},
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
			ts := failingHTTP(t, tc.sse, tc.fail, tc.status, false)
			sc := config.Server{URL: ts.URL + "/mcp?key=" + secret, Type: typ, Headers: map[string]string{"Authorization": "Bearer " + secret}}
			st, _ := hostileHub(t, sc, &upstream.HubOptions{Timeout: waitLimit()})
			method := http.MethodPost
			if tc.fail == "GET" {
				method = http.MethodGet
			}
			// (an SSE server's POSTs go to its endpoint, with a session id, redacted)
			want := fmt.Sprintf("HTTP %d %s from %s %s/mcp?", tc.status, http.StatusText(tc.status), method, ts.URL)
			var err error
			request := tc.fail == "tools/call" || tc.fail == "resources/read" || tc.fail == "prompts/get"
			if request {
				if st.State != upstream.StateReady {
					t.Fatalf("state %s (%v), want ready", st.State, st.Err)
				}
				// hostileHub's Hub is closed; ask a fresh one.
				cfg := &config.Config{Servers: map[string]config.Server{"evil": sc}}
				hub := startHub(t, cfg, &upstream.HubOptions{Store: store.NewMemory(), MaxRestarts: -1}, nil)
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
				defer cancel()
				switch tc.fail {
				case "tools/call":
					_, err = hub.Call(ctx, "evil__echo", nil)
				case "resources/read":
					_, err = hub.Passthrough().ReadResource(ctx, "test://doc")
				case "prompts/get":
					_, err = hub.Passthrough().GetPrompt(ctx, "evil__pick", nil)
				}
			} else {
				if st.State != upstream.StateFailed {
					t.Fatalf("state %s, want failed", st.State)
				}
				err = st.Err
			}
			if request && tc.status >= 500 && !errors.Is(err, upstream.ErrServerUnavailable) {
				t.Errorf("error %v: want ErrServerUnavailable for a %d", err, tc.status)
			}
			msg := fmt.Sprint(err)
			if !strings.Contains(msg, want) || !strings.Contains(msg, "evil") || !strings.Contains(msg, tc.hint) || strings.Contains(msg, secret) {
				t.Fatalf("error %q: want %q, the server, hint %q, no secret", msg, want, tc.hint)
			}
			t.Logf("%s", msg)
		})
	}
}

// TestHTTPErrorWithRPCBody: an HTTP error whose body is a JSON-RPC error
// (a 4xx, which the SDK decodes) keeps its status: in the text the model
// gets for a call, and in the error of a resource read.
func TestHTTPErrorWithRPCBody(t *testing.T) {
	checkGoroutines(t)
	for _, fail := range []string{"tools/call", "resources/read"} {
		t.Run(strings.ReplaceAll(fail, "/", "_"), func(t *testing.T) {
			ts := failingHTTP(t, false, fail, http.StatusBadRequest, true)
			cfg := &config.Config{Servers: map[string]config.Server{"evil": {URL: ts.URL + "/mcp", Type: "http"}}}
			hub := startHub(t, cfg, &upstream.HubOptions{Store: store.NewMemory(), MaxRestarts: -1}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit())
			defer cancel()
			const want = "HTTP 400 Bad Request"
			if fail == "tools/call" {
				res, err := hub.Call(ctx, "evil__echo", nil)
				if err != nil {
					t.Fatalf("call: %v, want an error result", err)
				}
				if !res.IsError || !strings.Contains(res.Content, want) || !strings.Contains(res.Content, "failing on purpose") {
					t.Fatalf("result %+v: want an error naming %q and the server's message", res, want)
				}
				return
			}
			_, err := hub.Passthrough().ReadResource(ctx, "test://doc")
			var rpcErr *upstream.RPCError
			if !errors.As(err, &rpcErr) || rpcErr.Code != -32602 || !strings.Contains(fmt.Sprint(err), want) {
				t.Fatalf("error %v: want the server's JSON-RPC error -32602 and %q", err, want)
			}
		})
	}
}
