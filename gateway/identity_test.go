package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsift/toolsift/gateway"
	"github.com/toolsift/toolsift/gateway/authn"
	"github.com/toolsift/toolsift/internal/testenv"
)

// asUser stands for an authenticating middleware in front of the
// Gateway's handler: the X-Test-User header names the request's user.
func asUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-Test-User"); u != "" {
			r = r.WithContext(authn.WithIdentity(r.Context(), authn.Identity{User: u, Teams: []string{"eng"}}))
		}
		next.ServeHTTP(w, r)
	})
}

type userHeader struct {
	user string
	next http.RoundTripper
}

func (u userHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-User", u.user)
	return u.next.RoundTrip(r)
}

// TestIdentityReachesHandlers: the Identity a middleware sets on a
// request reaches the MCP handlers on both wires (the log lines name the
// user), and a session opened by one user is refused to another.
func TestIdentityReachesHandlers(t *testing.T) {
	ts, hub := openToolset(t, localTools(t))
	var buf testenv.Buffer
	p, err := gateway.NewProxy(ts, hub, &gateway.ProxyOptions{Telemetry: gateway.Telemetry{Logger: slog.New(slog.NewTextHandler(&buf, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(asUser(p.Handler(nil)))
	defer srv.Close()
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			from := len(buf.String())
			hc := srv.Client()
			hc.Transport = userHeader{"alice", hc.Transport}
			cl := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			c := &client{ClientSession: cs, changed: make(chan struct{}, 16)}
			c.search(t, "add two numbers", 1)
			if text, isErr := c.call(t, "call_tool", map[string]any{"name": "math__add", "arguments": map[string]any{"a": 40, "b": 2}}); isErr || text != "42" {
				t.Errorf("call_tool(math__add) = %q (isError %v)", text, isErr)
			}
			for _, msg := range []string{"msg=search", "msg=call"} {
				found := false
				for line := range strings.SplitSeq(buf.String()[from:], "\n") {
					if strings.Contains(line, msg) {
						found = true
						if !strings.Contains(line, "user=alice") {
							t.Errorf("log line without its user: %s", line)
						}
					}
				}
				if !found {
					t.Errorf("no %s line in the log:\n%s", msg, buf.String())
				}
			}
		})
	}

	// A session is the user's who opened it.
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize: %s, no session", resp.Status)
	}
	for user, want := range map[string]int{"bob": http.StatusForbidden, "alice": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(listBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("X-Test-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s's tools/list on alice's session: %s, want %d", user, resp.Status, want)
		}
	}
}
