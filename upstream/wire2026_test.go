package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/store"
	"github.com/toolsift/toolsift/upstream"
)

// TestUpstream2026: to a server of MCP 2026-07-28 (the go-sdk's stateless
// streamable HTTP) the Hub begins with server/discover, sends no
// initialize, and every request carries the revision's headers
// (Mcp-Protocol-Version, Mcp-Method, and Mcp-Name for a call) and its
// per-request _meta (protocol version, client capabilities).
func TestUpstream2026(t *testing.T) {
	type seen struct {
		method, header, name, version string
		meta                          map[string]json.RawMessage
	}
	var mu sync.Mutex
	var got []seen
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newServer("up", nil, "echo") }, &mcp.StreamableHTTPOptions{Stateless: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Meta map[string]json.RawMessage `json:"_meta"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				mu.Lock()
				got = append(got, seen{msg.Method, r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), r.Header.Get("Mcp-Protocol-Version"), msg.Params.Meta})
				mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close) // after the Hub's Close (LIFO), which ends its subscriptions/listen stream
	hub := startHub(t, &config.Config{Servers: map[string]config.Server{"up": {URL: srv.URL, Type: "http", ProtocolVersion: "2026-07-28"}}},
		&upstream.HubOptions{Store: store.NewMemory()}, nil)
	if st := statusOf(t, hub, "up"); st.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", st.ProtocolVersion)
	}
	res, err := hub.Call(context.Background(), "up__echo", nil)
	if err != nil || res.Content != "up:echo" {
		t.Fatalf("call = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0].method != "server/discover" {
		t.Fatalf("requests %+v, want server/discover first", got)
	}
	calls := 0
	for _, s := range got {
		if s.method == "initialize" {
			t.Errorf("the Hub sent initialize to a server of 2026-07-28")
		}
		if s.header != s.method || s.version != "2026-07-28" {
			t.Errorf("%s: Mcp-Method %q, Mcp-Protocol-Version %q; want the method and 2026-07-28", s.method, s.header, s.version)
		}
		if string(s.meta["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` || s.meta["io.modelcontextprotocol/clientCapabilities"] == nil {
			t.Errorf("%s: _meta %v, want the protocol version and the client's capabilities", s.method, s.meta)
		}
		if s.method == "tools/call" {
			calls++
			if s.name != "echo" {
				t.Errorf("tools/call: Mcp-Name %q, want the upstream's name echo", s.name)
			}
		}
	}
	if calls != 1 {
		t.Errorf("%d tools/call requests, want 1", calls)
	}
}
